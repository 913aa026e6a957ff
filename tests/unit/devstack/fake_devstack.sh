# DevStack as the OPIE plugin sees it, for tests/unit/devstack: the
# functions it calls, stubbed. Calls that would change the system are
# recorded in $CALLS instead; ini files are really edited (by
# $NOVA_BIN_DIR/opie-manage, which runs this tree's opie-manage).
#
# Needs: PYTHON, TESTS_DIR, CALLS, ENABLED_SERVICES and the DevStack
# variables (DEST, NOVA_CONF, NOVA_CPU_CONF, NOVA_BIN_DIR, ...).

function _record {
    echo "$*" >> $CALLS
}

# The plugin edits nova.conf with opie-manage nova-conf; stack.sh merges
# local.conf's [[post-config]] sections with iniset.
function iniset {
    $PYTHON $TESTS_DIR/inifile.py "$@"
}

# Any of the services enabled, as DevStack answers.
function is_service_enabled {
    local service
    for service in "$@"; do
        if [[ ",$ENABLED_SERVICES," == *",$service,"* ]]; then
            return 0
        fi
    done
    return 1
}

function enable_service {
    local service
    for service in "$@"; do
        is_service_enabled $service || ENABLED_SERVICES+=",$service"
    done
}

function echo_summary {
    echo "summary: $*"
}

function setup_develop {
    _record setup_develop "$@"
}

function pip_install {
    _record pip_install "$@"
}

function run_process {
    _record run_process "$@"
}

function stop_process {
    _record stop_process "$@"
}

SYSTEMCTL="_record systemctl"
