"""The documentation holds together: every relative link in README.md and
docs/**/*.md points at a file that exists, and every page under docs/ is
reachable from docs/index.md by following links (the README links to the
index)."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / 'docs'
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
# Fenced code is not prose: a "[x](y)" there is not a link.
FENCE = re.compile(r'^```.*?^```', re.S | re.M)


def _pages():
    return [ROOT / 'README.md'] + sorted(DOCS.rglob('*.md'))


def _links(page):
    text = FENCE.sub('', page.read_text())
    for target in LINK.findall(text):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target) or target.startswith('#'):
            continue  # http:, mailto:, an anchor on the same page
        path = target.split('#', 1)[0]
        yield target, (page.parent / path).resolve()


def test_every_relative_link_resolves():
    broken = [
        '%s: %s' % (page.relative_to(ROOT), target)
        for page in _pages()
        for target, path in _links(page)
        if not path.exists()
    ]
    assert broken == []


def test_every_docs_page_is_reachable_from_the_index():
    seen, todo = set(), [DOCS / 'index.md']
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen.add(page)
        for _target, path in _links(page):
            if path.suffix == '.md' and path.exists() and DOCS in path.parents:
                todo.append(path)
    orphans = sorted(
        str(p.relative_to(ROOT)) for p in DOCS.rglob('*.md') if p not in seen
    )
    assert orphans == []
    readme = {path for _t, path in _links(ROOT / 'README.md')}
    assert DOCS / 'index.md' in readme


def test_the_readme_stays_a_users_document():
    assert len((ROOT / 'README.md').read_text().splitlines()) <= 400
