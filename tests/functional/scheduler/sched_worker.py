"""One scheduler process for the active/active test.

``python -m tests.functional.scheduler.sched_worker CONF.json REQUESTS.json
GO_FILE OUT.json``: builds the real scheduler (DB-backed host states, the
real placement over HTTP), waits for GO_FILE so every process starts at once,
then sends its requests to ``select_destinations`` from several threads and
writes ``{instance_uuid: {"host": .. } | {"error": ..}}`` plus
``"_refused_claims"``: claims placement refused (another process won), and
``"_refused_kinds"``: their outcomes (``refused``: capacity gone).
"""

import concurrent.futures
import json
import os
import sys
import time


def main(conf_path, requests_path, go_file, out_path):
    from nimbus.common import config
    from nimbus.common import context
    from nimbus import services
    from nimbus.scheduler import manager as scheduler_manager

    with open(conf_path) as f:
        overrides = json.load(f)
    with open(requests_path) as f:
        requests = json.load(f)
    conf = config.build_conf([], overrides=overrides)
    placement = services.placement(conf)
    refused = []
    claim = placement.claim

    def counting_claim(*args, **kwargs):
        outcome = claim(*args, **kwargs)
        if not outcome.claimed:
            refused.append((args[1], outcome.status))
        return outcome

    placement.claim = counting_claim
    mgr = scheduler_manager.build_manager(
        conf,
        placement=placement,
        cells=services.cell_directory(conf),
        api_db=services.api_db(conf),
    )
    mgr.host_manager.refresh()
    with open(out_path + '.ready', 'w') as f:
        f.write('ready')
    deadline = time.monotonic() + 120
    while not os.path.exists(go_file) and time.monotonic() < deadline:
        time.sleep(0.01)

    def one(spec):
        ctxt = context.get_admin_context()
        uuid = spec['instance_uuids'][0]
        try:
            result = mgr.select_destinations(
                ctxt, request_spec=spec, instance_uuids=[uuid]
            )
            return uuid, {
                'host': result[0][0]['service_host'],
                'alternates': len(result[0]) - 1,
            }
        except Exception as exc:  # the test checks every failure's reason
            return uuid, {
                'error': type(exc).__name__,
                'reason': getattr(exc, 'reason', str(exc)),
            }

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = dict(pool.map(one, requests))
    results['_refused_claims'] = len(refused)
    results['_refused_kinds'] = sorted({status for _u, status in refused})
    mgr.shutdown()
    with open(out_path, 'w') as f:
        json.dump(results, f)


if __name__ == '__main__':
    main(*sys.argv[1:5])
