#!/bin/bash
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

#
# DevStack plugin of OPIE, the OpenStack Preemptible Instances Extension.
# What each phase does, and why there, is in doc/source/operator/devstack.rst.
#
# stack install      install OPIE into Nova's Python environment
# stack post-config  scheduler: OPIE's filter, weighers and [opie] group in
#                    $NOVA_CONF (opie-manage nova-conf scheduler)
# stack extra        scheduler: add OPIE's filter and weighers back if a
#                    local.conf [[post-config|$NOVA_CONF]] block replaced
#                    them, run opie-scheduler in place of nova-scheduler;
#                    compute: provider config location and shelve offload
#                    in $NOVA_CPU_CONF (opie-manage nova-conf compute), the
#                    provider.yaml that gives the CUSTOM_PREEMPTIBLE_*
#                    inventory, restart of every nova-compute unit;
#                    API: the preemptible twins of $OPIE_FLAVORS
# clean              remove the provider.yaml

function install_opie {
    setup_develop $OPIE_DIR
}

# Shelve mode snapshots victims with the credentials of Nova's own
# [service_user] group, which DevStack writes into nova.conf when
# NOVA_USE_SERVICE_TOKEN is True (its default): no password here.
function check_opie_settings {
    if [[ "$OPIE_TERMINATION_MODE" == "shelve" && \
            "${NOVA_USE_SERVICE_TOKEN:-True}" != "True" ]]; then
        # die prints its second argument only.
        die $LINENO "OPIE: OPIE_TERMINATION_MODE=shelve uses Nova's\
 [service_user] credentials; DevStack writes them only with\
 NOVA_USE_SERVICE_TOKEN=True"
    fi
}

function configure_opie_scheduler {
    $NOVA_BIN_DIR/opie-manage nova-conf scheduler --config-file $NOVA_CONF \
        --costs "$OPIE_COSTS" --billing-period $OPIE_BILLING_PERIOD \
        --max-victims $OPIE_MAX_VICTIMS \
        --termination-mode $OPIE_TERMINATION_MODE
}

# stack.sh merges local.conf's [[post-config|$NOVA_CONF]] blocks after the
# plugins' post-config phase: one that sets [filter_scheduler]
# enabled_filters, available_filters or weight_classes replaces the list
# OPIE's classes were added to. Add them back to the operator's list, as
# opie-manage does to any list it finds (no [opie] option is given, so
# those a block set stay as they are), and say so.
function restore_opie_scheduler_classes {
    local before
    before=$(mktemp)
    cp $NOVA_CONF $before
    $NOVA_BIN_DIR/opie-manage nova-conf scheduler --config-file $NOVA_CONF \
        || { rm -f $before; return 1; }
    if ! cmp -s $before $NOVA_CONF; then
        echo "WARNING: OPIE: a local.conf [[post-config|\$NOVA_CONF]] block" \
            "set [filter_scheduler] without OPIE's filter or weighers;" \
            "added them to its lists in $NOVA_CONF"
    fi
    rm -f $before
}

# The same scheduler service (name, binary record, topic) with OPIE's
# manager: DevStack's unit devstack@n-sch.service now runs opie-scheduler.
function start_opie_scheduler {
    stop_process n-sch
    run_process n-sch "$NOVA_BIN_DIR/opie-scheduler --config-file $NOVA_CONF"
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

# DevStack writes $NOVA_CPU_CONF only when it starts the computes, after
# the post-config phase, as a copy of $NOVA_CONF with the local.conf
# [[post-config|$NOVA_CPU_CONF]] blocks merged (lib/nova
# start_nova_compute): OPIE's compute settings go into that final file.
function configure_opie_compute {
    $NOVA_BIN_DIR/opie-manage nova-conf compute --config-file $NOVA_CPU_CONF \
        --provider-config-dir $OPIE_PROVIDER_CONFIG_DIR \
        --termination-mode $OPIE_TERMINATION_MODE
    opie_write_provider_config $OPIE_PROVIDER_CONFIG_DIR/opie.yaml
}

# The services DevStack runs nova-compute as (lib/nova start_nova_compute):
# n-cpu-1 .. n-cpu-$NUMBER_FAKE_NOVA_COMPUTE with the fake virt driver,
# which all read $NOVA_CPU_CONF (plus a nova-fake.conf-N of their own
# giving host and state_path), n-cpu otherwise.
function opie_compute_services {
    if [[ "$VIRT_DRIVER" == "fake" ]]; then
        seq -f 'n-cpu-%.0f' 1 ${NUMBER_FAKE_NOVA_COMPUTE:-1}
    else
        echo n-cpu
    fi
}

# nova-compute reads provider.yaml only when it starts. A unit that is
# missing fails systemctl, and so stack.sh.
function restart_opie_computes {
    local service
    for service in $(opie_compute_services); do
        $SYSTEMCTL restart devstack@$service.service
    done
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
        check_opie_settings
        if is_service_enabled n-sch; then
            echo_summary "Configuring OPIE's scheduler"
            configure_opie_scheduler
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        if is_service_enabled n-cpu; then
            echo_summary "Configuring OPIE on the computes"
            configure_opie_compute
            restart_opie_computes
        fi
        if is_service_enabled n-sch; then
            echo_summary "Starting opie-scheduler in place of nova-scheduler"
            restore_opie_scheduler_classes
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
