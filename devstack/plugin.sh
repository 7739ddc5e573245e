#!/bin/bash
# devstack/plugin.sh: devstack calls this with the phase as arguments
# (stack install|post-config|extra|test-config, unstack, clean).
#
#   [[local|localrc]]
#   enable_plugin nimbus <this repository> main

# shellcheck source=devstack/lib/nimbus
source "$(dirname "${BASH_SOURCE[0]}")/lib/nimbus"

if is_service_enabled nimbus-api nimbus-placement nimbus-scheduler \
        nimbus-conductor nimbus-compute nimbus-accelerator-api \
        nimbus-accelerator-agent; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing Nimbus"
        install_nimbus
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring Nimbus"
        configure_nimbus
        create_nimbus_accounts
        if is_service_enabled nimbus-api; then
            init_nimbus
        fi
        if is_service_enabled nimbus-accelerator-api; then
            init_nimbus_accelerator
        fi
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Starting Nimbus"
        start_nimbus
        discover_nimbus_hosts
    elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
        configure_tempest_for_nimbus
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_nimbus
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_nimbus
    fi
fi
