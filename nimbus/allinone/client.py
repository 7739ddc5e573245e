"""A minimal compute API client for the demo, the CLI and tests."""

import requests


def root_url(url):
    """nimbus-api's root from any URL of it: ``http://h:8774``,
    ``http://h:8774/v2.1`` (what all-in-one prints) or ``.../v2``."""
    url = url.strip().rstrip('/')
    for suffix in ('/v2.1', '/v2'):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


class ComputeClient:
    """Talks to nimbus-api with the noauth2 token ``user:project``."""

    def __init__(
        self,
        url,
        user='admin',
        project='admin',
        roles='admin',
        microversion='2.72',
        timeout=30,
    ):
        self.url = root_url(url) + '/v2.1'
        self.images_url = root_url(url) + '/v2'
        self.session = requests.Session()
        self.session.headers.update(
            {
                'X-Auth-Token': '%s:%s' % (user, project),
                'X-Roles': roles,
                'OpenStack-API-Version': 'compute %s' % microversion,
                'Content-Type': 'application/json',
            }
        )
        self.timeout = timeout

    def _call(self, method, url, **kwargs):
        response = self.session.request(
            method, url, timeout=self.timeout, **kwargs
        )
        if response.status_code >= 400:
            raise RuntimeError(
                '%s %s -> %s %s'
                % (method, url, response.status_code, response.text[:500])
            )
        return response.json() if response.content else None

    def get(self, path, **kwargs):
        return self._call('GET', self.url + path, **kwargs)

    def post(self, path, body):
        return self._call('POST', self.url + path, json=body)

    def delete(self, path):
        return self._call('DELETE', self.url + path)

    def create_flavor(self, name, vcpus, ram, disk, extra_specs=None):
        flavor = self.post(
            '/flavors',
            {
                'flavor': {
                    'name': name,
                    'vcpus': vcpus,
                    'ram': ram,
                    'disk': disk,
                }
            },
        )['flavor']
        if extra_specs:
            self.post(
                '/flavors/%s/os-extra_specs' % flavor['id'],
                {'extra_specs': extra_specs},
            )
        return flavor

    def images(self):
        return self._call('GET', self.images_url + '/images')['images']

    def create_image(self, name, properties=None):
        body = dict(properties or {})
        body.update(
            {'name': name, 'container_format': 'bare', 'disk_format': 'raw'}
        )
        return self._call('POST', self.images_url + '/images', json=body)

    def create_server(
        self,
        name,
        flavor_id,
        image_id,
        min_count=1,
        max_count=1,
        hints=None,
        **extra,
    ):
        body = {
            'server': dict(
                {
                    'name': name,
                    'flavorRef': flavor_id,
                    'imageRef': image_id,
                    'networks': 'none',
                    'min_count': min_count,
                    'max_count': max_count,
                },
                **extra,
            )
        }
        if hints:
            body['os:scheduler_hints'] = hints
        return self.post('/servers', body)

    def servers(self):
        return self.get('/servers/detail')['servers']

    def server(self, uuid):
        return self.get('/servers/%s' % uuid)['server']
