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

# A stub DevStack for tests/unit/devstack: stack.sh as the OPIE plugin
# meets it, modelled (not copied) from DevStack's source. Source it, then
# call stack_sh or clean_sh. What it models, and where DevStack does it:
#
# - stack.sh's order: the [[local|localrc]] section of local.conf is read
#   first (extract_localrc_section, stackrc), the plugins' settings are
#   sourced (run_phase source), configure_nova writes nova.conf
#   (lib/nova create_nova_conf), then the phases: stack pre-install,
#   stack install, stack post-config, the merge of the [[post-config|FILE]]
#   blocks of local.conf (merge_config_group), start_nova, the merge of the
#   [[extra|FILE]] blocks, stack extra, the merge of [[post-extra|FILE]].
# - lib/nova start_nova_compute: nova-cpu.conf is a copy of nova.conf made
#   when the computes start, with the [[post-config|$NOVA_CPU_CONF]] blocks
#   merged again; with VIRT_DRIVER=fake, NUMBER_FAKE_NOVA_COMPUTE (stackrc:
#   1 by default) computes run as services n-cpu-1..N, each with its own
#   nova-fake.conf-I (host, state_path), otherwise one runs as n-cpu.
# - functions-common run_process / stop_process: service S runs as the
#   systemd unit devstack@S.service (_run_under_systemd writes the unit
#   file, then daemon-reload, enable, start); is_service_enabled also
#   answers for n-cpu-* when n-cpu is enabled.
# - $SYSTEMCTL (stackrc: "sudo systemctl"): here fake_systemctl, which keeps
#   units in $SYSTEMD_DIR and fails, as systemctl does, on a unit that does
#   not exist.
#
# Every systemctl call, setup_develop and each phase start are recorded in
# $CALLS. ini files are really edited (by inifile.py and by
# $NOVA_BIN_DIR/opie-manage).
#
# Needs: PYTHON, TESTS_DIR, CALLS, PLUGIN_SOURCE (the tree enable_plugin
# "clones"), TOP_DIR (holds local.conf), DEST, DATA_DIR, NOVA_CONF_DIR,
# NOVA_BIN_DIR, SYSTEMD_DIR, ENABLED_SERVICES.

function _record {
    echo "$*" >> $CALLS
}

function die {
    echo "[ERROR] $2" >&2
    exit 1
}

function echo_summary {
    echo "summary: $*"
}

# inc/ini-config
function iniset {
    [[ "$1" == "-sudo" ]] && shift
    $PYTHON $TESTS_DIR/inifile.py set "$@"
}

function inidelete {
    [[ "$1" == "-sudo" ]] && shift
    $PYTHON $TESTS_DIR/inifile.py delete "$@"
}

# inc/meta-config: merge_config_file LOCAL_CONF GROUP FILE_SPEC
function merge_config_file {
    local real
    real=$(eval echo $3)
    $PYTHON $TESTS_DIR/inifile.py merge $1 $2 "$3" $real
}

function merge_config_group {
    local local_conf=$1 group=$2 spec
    [[ -r $local_conf ]] || return 0
    for spec in $($PYTHON $TESTS_DIR/inifile.py meta-files $local_conf \
            $group); do
        mkdir -p $(dirname $(eval echo $spec))
        merge_config_file $local_conf $group "$spec"
    done
}

# functions-common: services
function is_service_enabled {
    local service
    for service in "$@"; do
        [[ ",$ENABLED_SERVICES," == *",$service,"* ]] && return 0
        [[ $service == n-cpu-* && ",$ENABLED_SERVICES," == *",n-cpu,"* ]] \
            && return 0
        [[ $service == nova && ",$ENABLED_SERVICES" == *",n-"* ]] && return 0
    done
    return 1
}

function enable_service {
    local service
    for service in "$@"; do
        is_service_enabled $service || ENABLED_SERVICES+=",$service"
    done
}

function disable_service {
    local service
    for service in "$@"; do
        ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," |
            sed "s/,$service,/,/g; s/^,//; s/,$//")
    done
}

function setup_develop {
    _record setup_develop "$@"
}

function pip_install {
    _record pip_install "$@"
}

# systemctl, on unit files in $SYSTEMD_DIR; state in $SYSTEMD_DIR/.state.
function fake_systemctl {
    _record systemctl "$*"
    local verb=$1 unit=$2 state=$SYSTEMD_DIR/.state
    mkdir -p $state
    case $verb in
        daemon-reload) return 0 ;;
        is-enabled)
            if [[ -e $state/$unit.enabled ]]; then
                echo enabled
                return 0
            fi
            echo disabled
            return 1 ;;
    esac
    if [[ ! -f $SYSTEMD_DIR/$unit ]]; then
        echo "Failed to $verb $unit: Unit $unit not found." >&2
        return 5
    fi
    case $verb in
        enable) touch $state/$unit.enabled ;;
        disable) rm -f $state/$unit.enabled ;;
        start|restart) touch $state/$unit.active ;;
        stop) rm -f $state/$unit.active ;;
        *) echo "fake_systemctl: $verb?" >&2; return 1 ;;
    esac
}
SYSTEMCTL=fake_systemctl

# functions-common: run_process SERVICE COMMAND
function run_process {
    local service=$1 command=$2
    local unit=devstack@$service.service
    is_service_enabled $service || return 0
    mkdir -p $SYSTEMD_DIR
    printf '[Unit]\nDescription = Devstack %s\n[Service]\nExecStart = %s\n' \
        $unit "$command" > $SYSTEMD_DIR/$unit
    $SYSTEMCTL daemon-reload
    $SYSTEMCTL enable $unit
    $SYSTEMCTL start $unit
}

function stop_process {
    local unit=devstack@$1.service
    is_service_enabled $1 || return 0
    if $SYSTEMCTL is-enabled $unit > /dev/null; then
        $SYSTEMCTL stop $unit
        $SYSTEMCTL disable $unit
    fi
}

# functions-common: plugins
declare -A GITDIR GITREPO

function enable_plugin {
    DEVSTACK_PLUGINS+=",$1"
    GITREPO[$1]=$2
    GITDIR[$1]=$DEST/$1
}

# git clone of each plugin: its tree is PLUGIN_SOURCE.
function fetch_plugins {
    local plugin
    for plugin in ${DEVSTACK_PLUGINS//,/ }; do
        mkdir -p $DEST
        ln -sfn $PLUGIN_SOURCE ${GITDIR[$plugin]}
    done
}

function run_phase {
    local plugin
    _record "phase $*"
    for plugin in ${DEVSTACK_PLUGINS//,/ }; do
        if [[ "$1" == "source" ]]; then
            source ${GITDIR[$plugin]}/devstack/settings
        else
            source ${GITDIR[$plugin]}/devstack/plugin.sh "$@"
        fi
    done
}

# lib/nova and lib/keystone: configure_nova makes the instances directory;
# what create_nova_conf writes that matters to OPIE (NOVA_FILTERS; the
# [service_user] of init_nova_service_user_conf, with
# NOVA_USE_SERVICE_TOKEN=True, its default), then the fake driver's
# configure_nova_hypervisor.
function configure_nova {
    mkdir -p $NOVA_CONF_DIR $NOVA_STATE_PATH/instances
    rm -f $NOVA_CONF
    cat > $NOVA_CONF <<EOF
[DEFAULT]
state_path = $NOVA_STATE_PATH
instances_path = $NOVA_STATE_PATH/instances
my_ip = 192.0.2.10
[filter_scheduler]
enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,SameHostFilter,DifferentHostFilter
[database]
connection = mysql+pymysql://root:secret@127.0.0.1/nova_cell0
EOF
    if [[ "$NOVA_USE_SERVICE_TOKEN" == "True" ]]; then
        cat >> $NOVA_CONF <<EOF
[service_user]
send_service_user_token = True
auth_type = password
interface = public
auth_url = $KEYSTONE_SERVICE_URI
username = nova
password = $SERVICE_PASSWORD
user_domain_name = $SERVICE_DOMAIN_NAME
project_name = $SERVICE_PROJECT_NAME
project_domain_name = $SERVICE_DOMAIN_NAME
EOF
    fi
    if [[ "$VIRT_DRIVER" == "fake" ]]; then
        printf '[compute]\ncompute_driver = fake.FakeDriverWithoutFakeNodes\n' \
            >> $NOVA_CONF
    fi
}

function start_nova_compute {
    cp $NOVA_CONF $NOVA_CPU_CONF
    merge_config_file $TOP_DIR/local.conf post-config '$NOVA_CPU_CONF'
    inidelete $NOVA_CPU_CONF database connection
    if [[ "$VIRT_DRIVER" == "fake" ]]; then
        local i fake_conf
        for i in $(seq 1 $NUMBER_FAKE_NOVA_COMPUTE); do
            fake_conf=$NOVA_FAKE_CONF-$i
            mkdir -p $NOVA_STATE_PATH/$HOSTNAME$i
            printf '[DEFAULT]\nhost = %s\nstate_path = %s\n' $HOSTNAME$i \
                $NOVA_STATE_PATH/$HOSTNAME$i > $fake_conf
            run_process n-cpu-$i "$NOVA_BIN_DIR/nova-compute --config-file $NOVA_CPU_CONF --config-file $fake_conf"
        done
    else
        run_process n-cpu "$NOVA_BIN_DIR/nova-compute --config-file $NOVA_CPU_CONF"
    fi
}

function start_nova {
    run_process n-sch "$NOVA_BIN_DIR/nova-scheduler --config-file $NOVA_CONF"
    run_process n-cond "$NOVA_BIN_DIR/nova-conductor --config-file $NOVA_CONF"
    start_nova_compute
}

# stackrc and lib/nova: settings, the localrc section of local.conf first.
function _stackrc {
    HOSTNAME=devstack
    STACK_USER=stack
    SERVICE_PASSWORD=secret
    SERVICE_PROJECT_NAME=service
    SERVICE_DOMAIN_NAME=Default
    KEYSTONE_SERVICE_URI=http://192.0.2.10/identity
    source <($PYTHON $TESTS_DIR/inifile.py meta-section $TOP_DIR/local.conf \
        local localrc)
    VIRT_DRIVER=${VIRT_DRIVER:-libvirt}
    if [[ "$VIRT_DRIVER" == "fake" ]]; then
        NUMBER_FAKE_NOVA_COMPUTE=${NUMBER_FAKE_NOVA_COMPUTE:-1}
    fi
    NOVA_STATE_PATH=$DATA_DIR/nova
    NOVA_CONF=$NOVA_CONF_DIR/nova.conf
    NOVA_CPU_CONF=$NOVA_CONF_DIR/nova-cpu.conf
    NOVA_FAKE_CONF=$NOVA_CONF_DIR/nova-fake.conf
    NOVA_USE_SERVICE_TOKEN=${NOVA_USE_SERVICE_TOKEN:-True}
}

function stack_sh {
    _stackrc
    fetch_plugins
    run_phase source
    if is_service_enabled nova; then
        configure_nova
    fi
    run_phase stack pre-install
    run_phase stack install
    run_phase stack post-config
    _record "merge post-config"
    merge_config_group $TOP_DIR/local.conf post-config
    if is_service_enabled nova; then
        _record "start_nova"
        start_nova
    fi
    _record "merge extra"
    merge_config_group $TOP_DIR/local.conf extra
    run_phase stack extra
    _record "merge post-extra"
    merge_config_group $TOP_DIR/local.conf post-extra
}

# clean.sh: unstack.sh, then the clean phase.
function clean_sh {
    _stackrc
    fetch_plugins
    run_phase source
    run_phase unstack
    run_phase clean
}
