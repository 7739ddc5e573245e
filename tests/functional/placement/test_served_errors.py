"""What the HTTP server refuses before placement runs, over a real socket.

cheroot (the daemons' and all-in-one's server) refuses a Content-Length
that is not an integer itself; placement's app gives it its JSON error
shape and Placement's words, as OpenStack Placement 16 answers that request
(its basic-http.yaml, "bad content length not int"). The in-process half
of the same refusal is in gabbits/placement16-parity.yaml.
"""

import json
import socket

from nimbus.common.wsgi import server
from nimbus.placement import wsgi
from tests.functional.placement import fixtures


def _raw_request(host, port, request):
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    return b''.join(chunks)


def test_non_integer_content_length_is_placements_json_400(tmp_path):
    with fixtures.fresh_database(tmp_path) as url:
        app = wsgi.make_app(fixtures.make_conf(url))
        http = server.EmbeddedServer(app, '127.0.0.1', 0, threads=2).start()
        try:
            body = b'{"name": "x"}'
            answer = _raw_request(
                http.host,
                http.port,
                b'POST /resource_providers HTTP/1.1\r\n'
                b'Host: placement\r\n'
                b'X-Auth-Token: admin\r\n'
                b'Content-Type: application/json\r\n'
                b'Content-Length: hi mom\r\n'
                b'Connection: close\r\n\r\n' + body,
            )
        finally:
            http.stop()
    head, _, payload = answer.partition(b'\r\n\r\n')
    lines = head.decode('iso-8859-1').split('\r\n')
    assert lines[0].split()[1] == '400', answer
    headers = {
        k.strip().lower(): v.strip()
        for k, _, v in (line.partition(':') for line in lines[1:])
    }
    assert headers['content-type'] == 'application/json'
    error = json.loads(payload)['errors'][0]
    assert error['status'] == 400
    assert error['title'] == 'Bad Request'
    assert 'content-length header must be an integer' in error['detail']
