#!/bin/bash
#
# DevStack plugin of OPIE, the OpenStack Preemptible Instances Extension.
#
# stack install      install OPIE into Nova's Python environment
# stack post-config  scheduler: OPIE's filter, weighers and [opie] group
#                    (opie-manage nova-conf scheduler); compute: where the
#                    provider config is, shelve offload (opie-manage
#                    nova-conf compute) and the provider.yaml that gives it
#                    the CUSTOM_PREEMPTIBLE_* inventory
# stack extra        run opie-scheduler in place of nova-scheduler, bring
#                    provider.yaml up to date with the final nova-cpu.conf,
#                    create the preemptible twins of $OPIE_FLAVORS
# clean              remove the provider.yaml

function install_opie {
    setup_develop $OPIE_DIR
}

function configure_opie_scheduler {
    local service_user=()
    if [[ "$OPIE_TERMINATION_MODE" == "shelve" ]]; then
        # Shelving snapshots the victim to Glance on behalf of its owner.
        service_user=(--auth-url "$KEYSTONE_SERVICE_URI" --username nova
            --password "$SERVICE_PASSWORD"
            --project-name "$SERVICE_PROJECT_NAME"
            --domain-name "$SERVICE_DOMAIN_NAME")
    fi
    $NOVA_BIN_DIR/opie-manage nova-conf scheduler --config-file $NOVA_CONF \
        --costs "$OPIE_COSTS" --billing-period $OPIE_BILLING_PERIOD \
        --max-victims $OPIE_MAX_VICTIMS \
        --termination-mode $OPIE_TERMINATION_MODE "${service_user[@]}"
}

# opie_write_provider_config PATH - write this compute's provider.yaml
function opie_write_provider_config {
    local sizes=""
    sizes+=${OPIE_PROVIDER_VCPUS:+ --vcpus $OPIE_PROVIDER_VCPUS}
    sizes+=${OPIE_PROVIDER_MEMORY_MB:+ --memory-mb $OPIE_PROVIDER_MEMORY_MB}
    sizes+=${OPIE_PROVIDER_DISK_GB:+ --disk-gb $OPIE_PROVIDER_DISK_GB}
    $NOVA_BIN_DIR/opie-manage provider-config --config-file $NOVA_CPU_CONF \
        $sizes --output $1
}

function configure_opie_compute {
    $NOVA_BIN_DIR/opie-manage nova-conf compute --config-file $NOVA_CPU_CONF \
        --provider-config-dir $OPIE_PROVIDER_CONFIG_DIR \
        --termination-mode $OPIE_TERMINATION_MODE
    opie_write_provider_config $OPIE_PROVIDER_CONFIG_DIR/opie.yaml
}

# local.conf [[post-config]] sections are merged after this plugin's
# post-config phase: if they changed a ratio or a reserved amount,
# provider.yaml is stale and nova-compute must read it again.
function refresh_opie_provider_config {
    local current=$OPIE_PROVIDER_CONFIG_DIR/opie.yaml
    # Not *.yaml, so nova-compute never reads it; same directory, so the
    # rename is atomic.
    local fresh=$current.new
    opie_write_provider_config $fresh
    if cmp -s $fresh $current; then
        rm -f $fresh
        return
    fi
    echo "OPIE: nova-cpu.conf changed after post-config, updating $current"
    mv $fresh $current
    $SYSTEMCTL restart devstack@n-cpu.service
}

# The same scheduler service (name, binary record, topic) with OPIE's
# manager; DevStack stops it as n-sch.
function start_opie_scheduler {
    stop_process n-sch
    run_process n-sch "$NOVA_BIN_DIR/opie-scheduler --config-file $NOVA_CONF"
}

function create_opie_flavors {
    local flavor
    for flavor in $OPIE_FLAVORS; do
        $NOVA_BIN_DIR/opie-manage flavor create-preemptible $flavor \
            --os-cloud $OPIE_OS_CLOUD
    done
}

if is_service_enabled opie; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing OPIE"
        install_opie
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring OPIE"
        if is_service_enabled n-sch; then
            configure_opie_scheduler
        fi
        if is_service_enabled n-cpu; then
            configure_opie_compute
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        if is_service_enabled n-cpu; then
            refresh_opie_provider_config
        fi
        if is_service_enabled n-sch; then
            echo_summary "Starting opie-scheduler in place of nova-scheduler"
            start_opie_scheduler
        fi
        if is_service_enabled n-api; then
            echo_summary "Creating OPIE's preemptible flavors"
            create_opie_flavors
        fi
    fi

    if [[ "$1" == "clean" ]]; then
        rm -f $OPIE_PROVIDER_CONFIG_DIR/opie.yaml
    fi
fi
