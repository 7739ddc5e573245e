"""The OpenAPI generator (nimbus.common.wsgi.openapi) and the documents
checked into docs/openapi/."""

import os

import jsonschema
import pytest

from nimbus.cmd import openapi as openapi_cmd
from nimbus.common.wsgi import openapi

DOCS = os.path.join(
    os.path.dirname(__file__), '..', '..', '..', 'docs', 'openapi'
)


def _handler(req, resp):
    pass


ROUTES = [
    ('/things', {'GET': _handler, 'POST': _handler}),
    ('/things/{thing_id}/parts/{part}', {'DELETE': _handler}),
]
ERROR = {
    'type': 'object',
    'required': ['message'],
    'properties': {'message': {'type': 'string'}},
}


@pytest.mark.parametrize('name', sorted(openapi_cmd.DOCUMENTS))
def test_checked_in_document_is_the_generated_one(name):
    with open(os.path.join(DOCS, name)) as f:
        checked_in = f.read()
    assert checked_in == openapi_cmd.generated()[name], (
        'docs/openapi/%s is stale: run make openapi' % name
    )


def test_check_mode_reports_a_stale_file(tmp_path, capsys):
    assert openapi_cmd.main(['--output-dir', str(tmp_path)]) == 0
    assert openapi_cmd.main(['--output-dir', str(tmp_path), '--check']) == 0
    (tmp_path / 'placement.json').write_text('{}\n')
    assert openapi_cmd.main(['--output-dir', str(tmp_path), '--check']) == 1
    assert (
        'stale: %s' % (tmp_path / 'placement.json') in capsys.readouterr().out
    )


def test_undescribed_route_keeps_methods_and_path_parameters():
    doc = openapi.document(
        ROUTES, title='t', api_version='1', error_schema=ERROR
    )
    op = doc['paths']['/things/{thing_id}/parts/{part}']['delete']
    assert [(p['name'], p['in'], p['required']) for p in op['parameters']] == [
        ('thing_id', 'path', True),
        ('part', 'path', True),
    ]
    assert op['operationId'] == 'delete_things_thing_id_parts_part'
    assert set(op['responses']) == {
        '202',
        '204',
        '400',
        '401',
        '403',
        '404',
        '405',
        '406',
        '409',
        '413',
        '415',
    }
    assert op['responses']['404'] == {
        '$ref': '#/components/responses/Error404'
    }
    assert doc['components']['responses']['Error404']['content'][
        'application/json'
    ]['schema'] == {'$ref': '#/components/schemas/Error'}
    assert set(doc['paths']['/things']) == {'get', 'post'}


def test_described_operation_has_body_query_links_and_microversion():
    body = {
        'type': 'object',
        'properties': {'n': {'type': 'integer'}},
        'required': ('n',),
        '$schema': 'x',
    }
    ops = {
        ('POST', '/things'): openapi.Operation(
            body=body,
            success=(201,),
            errors=(409,),
            links={
                201: {
                    'Drop': (
                        'delete_things_thing_id_parts_part',
                        {'thing_id': '$response.body#/id'},
                    )
                }
            },
        ),
        ('GET', '/things'): openapi.Operation(
            query={
                'type': 'object',
                'required': ['a'],
                'properties': {
                    'a': {'type': 'string'},
                    'b': {'type': 'array', 'items': {'type': 'string'}},
                },
            }
        ),
    }
    doc = openapi.document(
        ROUTES,
        title='t',
        api_version='1',
        error_schema=ERROR,
        operations=ops,
        microversion=('OpenStack-API-Version', 'thing', '1.0', '1.5'),
        public_paths=('/things',),
    )
    post = doc['paths']['/things']['post']
    schema = post['requestBody']['content']['application/json']['schema']
    # Copied, tuples as lists, no $schema; the validator's own object is
    # untouched.
    assert schema == {
        'type': 'object',
        'properties': {'n': {'type': 'integer'}},
        'required': ['n'],
    }
    assert body['$schema'] == 'x'
    assert post['responses']['201']['links']['Drop']['parameters'] == {
        'thing_id': '$response.body#/id'
    }
    assert '409' in post['responses']
    get = doc['paths']['/things']['get']
    assert get['security'] == []
    assert 'security' not in post
    by_name = {p.get('name', p.get('$ref')): p for p in get['parameters']}
    assert by_name['a']['required'] and not by_name['b']['required']
    assert by_name['b']['explode'] is True
    assert '#/components/parameters/Microversion' in by_name
    assert (
        doc['components']['parameters']['Microversion']['name']
        == 'OpenStack-API-Version'
    )


def test_operation_not_in_the_route_table_is_refused():
    with pytest.raises(ValueError, match='/nowhere'):
        openapi.document(
            ROUTES,
            title='t',
            api_version='1',
            error_schema=ERROR,
            operations={('GET', '/nowhere'): openapi.Operation()},
        )


@pytest.mark.parametrize('name', sorted(openapi_cmd.DOCUMENTS))
def test_every_schema_in_the_documents_is_valid_json_schema(name):
    doc = openapi_cmd.DOCUMENTS[name]()
    assert doc['openapi'] == '3.1.0'
    count = 0
    for item in doc['paths'].values():
        for op in item.values():
            content = op.get('requestBody', {}).get('content', {})
            for media in content.values():
                jsonschema.Draft202012Validator.check_schema(media['schema'])
                count += 1
    assert count >= 10
    jsonschema.Draft202012Validator.check_schema(
        doc['components']['schemas']['Error']
    )
