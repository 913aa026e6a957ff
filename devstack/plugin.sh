#!/bin/bash
#
# DevStack plugin of OPIE, the OpenStack Preemptible Instances Extension.
#
# stack install      install OPIE into Nova's Python environment
# stack post-config  scheduler: OPIE's filter, weighers and [opie] group;
#                    compute: the provider.yaml that gives it the
#                    CUSTOM_PREEMPTIBLE_* inventory
# stack extra        run opie-scheduler in place of nova-scheduler, bring
#                    provider.yaml up to date with the final nova-cpu.conf,
#                    create the preemptible twins of $OPIE_FLAVORS
# clean              remove the provider.yaml

# Nova's defaults, used when DevStack left an option unset.
OPIE_NOVA_DEFAULT_FILTERS=nova.scheduler.filters.all_filters
OPIE_NOVA_DEFAULT_ENABLED=ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter
OPIE_NOVA_DEFAULT_WEIGHERS=nova.scheduler.weights.all_weighers

# opie_append_to_list LIST ITEMS - LIST (comma-separated) with each of
# ITEMS (comma-separated) it lacks appended
function opie_append_to_list {
    local list=$1
    local item
    for item in ${2//,/ }; do
        if [[ ",$list," != *",$item,"* ]]; then
            list=${list:+$list,}$item
        fi
    done
    echo "$list"
}

function install_opie {
    setup_develop $OPIE_DIR
}

function configure_opie_scheduler {
    local filters
    filters=$(iniget_multiline $NOVA_CONF filter_scheduler available_filters)
    filters=${filters:-$OPIE_NOVA_DEFAULT_FILTERS}
    if [[ " $filters " != *" $OPIE_FILTER_PATH "* ]]; then
        filters="$filters $OPIE_FILTER_PATH"
    fi
    # A multi-valued option: one line per value.
    iniset_multiline $NOVA_CONF filter_scheduler available_filters $filters

    local enabled
    enabled=$(iniget $NOVA_CONF filter_scheduler enabled_filters)
    iniset $NOVA_CONF filter_scheduler enabled_filters \
        $(opie_append_to_list "${enabled:-$OPIE_NOVA_DEFAULT_ENABLED}" $OPIE_FILTER)

    local weighers
    weighers=$(iniget $NOVA_CONF filter_scheduler weight_classes)
    iniset $NOVA_CONF filter_scheduler weight_classes \
        $(opie_append_to_list "${weighers:-$OPIE_NOVA_DEFAULT_WEIGHERS}" $OPIE_WEIGHERS)

    iniset $NOVA_CONF opie costs "$OPIE_COSTS"
    iniset $NOVA_CONF opie billing_period $OPIE_BILLING_PERIOD
    iniset $NOVA_CONF opie max_victims $OPIE_MAX_VICTIMS
    iniset $NOVA_CONF opie termination_mode $OPIE_TERMINATION_MODE
    if [[ "$OPIE_TERMINATION_MODE" == "shelve" ]]; then
        # Shelving snapshots the victim to Glance on behalf of its owner.
        iniset $NOVA_CONF opie auth_type password
        iniset $NOVA_CONF opie auth_url $KEYSTONE_SERVICE_URI
        iniset $NOVA_CONF opie username nova
        iniset $NOVA_CONF opie password $SERVICE_PASSWORD
        iniset $NOVA_CONF opie project_name $SERVICE_PROJECT_NAME
        iniset $NOVA_CONF opie user_domain_name $SERVICE_DOMAIN_NAME
        iniset $NOVA_CONF opie project_domain_name $SERVICE_DOMAIN_NAME
    fi
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
    iniset $NOVA_CPU_CONF compute provider_config_location $OPIE_PROVIDER_CONFIG_DIR
    if [[ "$OPIE_TERMINATION_MODE" == "shelve" ]]; then
        # Free a shelved victim's room at once.
        iniset $NOVA_CPU_CONF DEFAULT shelved_offload_time 0
    fi
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
