#!/bin/bash
# Stand-ins for the devstack functions and globals that devstack/plugin.sh
# and devstack/lib/nimbus call, so their phases run on a machine without
# devstack: against the local RabbitMQ and MariaDB, and a Keystone through
# the stock `openstack` CLI. Each function keeps devstack's name, arguments
# and effect; only how the effect is reached differs (a background process
# with a pid file instead of a systemd unit, configparser instead of
# devstack's ini functions).
#
# The caller exports HARNESS_DIR (pid files and logs), HARNESS_BIN_DIR (the
# venv's bin), ENABLED_SERVICES, and for Keystone KEYSTONE_SERVICE_URI and
# the admin's OS_* variables.

# shellcheck disable=SC2034  # globals read by the plugin

set -o errexit -o nounset -o pipefail

: "${HARNESS_DIR:?}" "${HARNESS_BIN_DIR:?}" "${ENABLED_SERVICES:?}"

DEST=${DEST:-$HARNESS_DIR/opt}
DATA_DIR=${DATA_DIR:-$HARNESS_DIR/data}
STACK_USER=${STACK_USER:-$(id -un)}
SERVICE_HOST=${SERVICE_HOST:-127.0.0.1}
SERVICE_PROTOCOL=${SERVICE_PROTOCOL:-http}
SERVICE_LISTEN_ADDRESS=${SERVICE_LISTEN_ADDRESS:-127.0.0.1}
SERVICE_TIMEOUT=${SERVICE_TIMEOUT:-120}
REGION_NAME=${REGION_NAME:-RegionOne}
ENABLE_DEBUG_LOG_LEVEL=${ENABLE_DEBUG_LOG_LEVEL:-False}
DATABASE_USER=${DATABASE_USER:-root}
DATABASE_PASSWORD=${DATABASE_PASSWORD:-}
DATABASE_HOST=${DATABASE_HOST:-127.0.0.1}
MYSQL_HOST=${MYSQL_HOST:-$DATABASE_HOST}
RABBIT_USERID=${RABBIT_USERID:-guest}
RABBIT_PASSWORD=${RABBIT_PASSWORD:-guest}
RABBIT_HOST=${RABBIT_HOST:-127.0.0.1}
SERVICE_PASSWORD=${SERVICE_PASSWORD:-service-secret}
SERVICE_PROJECT_NAME=${SERVICE_PROJECT_NAME:-service}
SERVICE_DOMAIN_NAME=${SERVICE_DOMAIN_NAME:-Default}
KEYSTONE_SERVICE_URI=${KEYSTONE_SERVICE_URI:-}
TEMPEST_CONFIG=${TEMPEST_CONFIG:-$HARNESS_DIR/tempest.conf}

mkdir -p "$DEST" "$DATA_DIR"

# devstack runs as a user with sudo; this harness runs as that user's root.
function sudo {
    "$@"
}

function echo_summary {
    echo ">>> $*"
}

function die {
    local line=$1
    shift
    echo "[ERROR] line $line: $*" >&2
    exit 1
}

function define_plugin {
    echo "plugin $1 defined" >>"$HARNESS_DIR/calls.log"
}

function get_python_exec_prefix {
    echo "$HARNESS_BIN_DIR"
}

# devstack's pip-installs the tree in develop mode. The venv this harness
# runs in already has it installed that way: check that it is this tree.
function setup_develop {
    local dir=$1 found
    found=$("$HARNESS_BIN_DIR/python" -c 'import nimbus, os; print(os.path.dirname(os.path.dirname(nimbus.__file__)))')
    if [[ "$(cd "$dir" && pwd -P)" != "$(cd "$found" && pwd -P)" ]]; then
        die $LINENO "the venv has nimbus from $found, not from $dir"
    fi
    echo "setup_develop $dir" >>"$HARNESS_DIR/calls.log"
}

# -- services ----------------------------------------------------------

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
        if ! is_service_enabled "$service"; then
            ENABLED_SERVICES="$ENABLED_SERVICES,$service"
        fi
    done
}

function disable_service {
    local service
    for service in "$@"; do
        ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," | sed "s/,$service,/,/g; s/^,//; s/,$//")
    done
}

# As devstack's: starts the command only when the service is enabled.
function run_process {
    local service=$1 command=$2
    if ! is_service_enabled "$service"; then
        return 0
    fi
    # shellcheck disable=SC2086  # the command line, split as systemd would
    setsid $command >"$HARNESS_DIR/$service.log" 2>&1 </dev/null &
    echo $! >"$HARNESS_DIR/$service.pid"
    echo "run_process $service" >>"$HARNESS_DIR/calls.log"
}

function stop_process {
    local service=$1 pidfile=$HARNESS_DIR/$1.pid
    if [[ ! -f "$pidfile" ]]; then
        return 0
    fi
    local pid
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [[ $waited -lt 60 ]]; do
        sleep 0.5
        waited=$((waited + 1))
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$pidfile"
    echo "stop_process $service" >>"$HARNESS_DIR/calls.log"
}

function wait_for_service {
    local timeout=$1 url=$2 waited=0
    until curl -g -s -o /dev/null --max-time 2 "$url"; do
        if [[ $waited -ge $timeout ]]; then
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

# -- configuration files -----------------------------------------------

function iniset {
    if [[ "$1" == "-sudo" ]]; then
        shift
    fi
    "$HARNESS_BIN_DIR/python" - "$@" <<'PY'
import configparser, os, sys
path, section, option, value = sys.argv[1:5]
parser = configparser.RawConfigParser(default_section='__none__')
parser.optionxform = str
if os.path.exists(path):
    parser.read(path)
if section != 'DEFAULT' and not parser.has_section(section):
    parser.add_section(section)
if section == 'DEFAULT' and not parser.has_section('DEFAULT'):
    parser.add_section('DEFAULT')
parser.set(section, option, value)
with open(path, 'w') as f:
    parser.write(f)
PY
}

# -- databases and the message bus -------------------------------------

function _harness_mysql {
    mysql -u"$DATABASE_USER" ${DATABASE_PASSWORD:+-p"$DATABASE_PASSWORD"} -h"$MYSQL_HOST" "$@"
}

function recreate_database {
    _harness_mysql -e "DROP DATABASE IF EXISTS $1; CREATE DATABASE $1 CHARACTER SET utf8;"
}

function database_connection_url {
    echo "mysql+pymysql://$DATABASE_USER:$DATABASE_PASSWORD@$MYSQL_HOST/$1?charset=utf8"
}

function rpc_backend_add_vhost {
    if ! rabbitmqctl list_vhosts | grep -qx "$1"; then
        rabbitmqctl add_vhost "$1" >/dev/null
        rabbitmqctl set_permissions -p "$1" "$RABBIT_USERID" ".*" ".*" ".*" >/dev/null
    fi
}

function get_transport_url {
    echo "rabbit://$RABBIT_USERID:$RABBIT_PASSWORD@$RABBIT_HOST:5672/${1:-}"
}

# -- keystone, through the stock CLI as the admin of OS_* ----------------

function _harness_openstack {
    "$HARNESS_BIN_DIR/openstack" "$@"
}

function get_or_add_user_project_role {
    local role=$1 user=$2 project=$3
    _harness_openstack role create --or-show "$role" >/dev/null
    _harness_openstack role add --user "$user" --user-domain "$SERVICE_DOMAIN_NAME" \
        --project "$project" --project-domain "$SERVICE_DOMAIN_NAME" "$role"
}

function create_service_user {
    local user=$1 role=${2:-admin}
    _harness_openstack project create --or-show --domain "$SERVICE_DOMAIN_NAME" \
        "$SERVICE_PROJECT_NAME" >/dev/null
    _harness_openstack user create --or-show --domain "$SERVICE_DOMAIN_NAME" \
        --password "$SERVICE_PASSWORD" "$user" >/dev/null
    get_or_add_user_project_role "$role" "$user" "$SERVICE_PROJECT_NAME"
}

function get_or_create_service {
    local name=$1 type=$2 description=$3
    _harness_openstack service show "$name" -f value -c id 2>/dev/null ||
        _harness_openstack service create --name "$name" \
            --description "$description" "$type" -f value -c id
}

# As devstack's: the public URL always, the admin and internal ones when
# given.
function get_or_create_endpoint {
    local service=$1 region=$2 public=$3 admin=${4:-} internal=${5:-}
    _harness_openstack endpoint create --region "$region" "$service" public "$public" >/dev/null
    if [[ -n "$admin" ]]; then
        _harness_openstack endpoint create --region "$region" "$service" admin "$admin" >/dev/null
    fi
    if [[ -n "$internal" ]]; then
        _harness_openstack endpoint create --region "$region" "$service" internal "$internal" >/dev/null
    fi
}

function configure_keystone_authtoken_middleware {
    local conf=$1 user=$2 section=${3:-keystone_authtoken}
    iniset "$conf" "$section" auth_type password
    iniset "$conf" "$section" interface public
    iniset "$conf" "$section" auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$conf" "$section" username "$user"
    iniset "$conf" "$section" password "$SERVICE_PASSWORD"
    iniset "$conf" "$section" user_domain_name "$SERVICE_DOMAIN_NAME"
    iniset "$conf" "$section" project_name "$SERVICE_PROJECT_NAME"
    iniset "$conf" "$section" project_domain_name "$SERVICE_DOMAIN_NAME"
}
