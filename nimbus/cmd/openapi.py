"""Write the OpenAPI documents of the REST APIs (``make openapi``).

``python -m nimbus.cmd.openapi [--output-dir docs/openapi]`` writes
``compute.json`` and ``placement.json``, the documents the APIs serve at
``/openapi.json``; ``--check`` writes nothing and exits 1 when a file
differs from what the code generates.
"""

import argparse
import os
import sys

from nimbus.api import openapi as compute_openapi
from nimbus.common.wsgi import openapi
from nimbus.placement import openapi as placement_openapi

DOCUMENTS = {
    'compute.json': compute_openapi.document,
    'placement.json': placement_openapi.document,
}


def generated():
    """``{file name: JSON text}`` of every API's document."""
    return {name: openapi.dumps(build()) for name, build in DOCUMENTS.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--output-dir', default='docs/openapi')
    parser.add_argument('--check', action='store_true')
    args = parser.parse_args(argv)
    stale = []
    for name, text in generated().items():
        path = os.path.join(args.output_dir, name)
        try:
            with open(path) as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            os.makedirs(args.output_dir, exist_ok=True)
            with open(path, 'w') as f:
                f.write(text)
    for path in stale:
        print('%s %s' % ('stale:' if args.check else 'wrote', path))
    return 1 if (args.check and stale) else 0


if __name__ == '__main__':
    sys.exit(main())
