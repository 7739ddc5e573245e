// The Nimbus dashboard: plain JavaScript, no build step.
//
// Authentication: an admin token, from the URL fragment (#token=...: a
// fragment never reaches the server or its logs) or the sign-in form, kept
// in sessionStorage and sent as X-Auth-Token on every fetch. The decision
// stream is read with fetch() too (EventSource cannot send headers), and
// parsed here as text/event-stream.
(function () {
  'use strict';
  var HOSTS_EVERY_MS = 5000;
  var FAILURES_EVERY_MS = 10000;
  var MAX_DECISIONS = 100;
  var state = { token: null, hosts: null, timers: [], stream: null };

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function api(path) {
    return fetch(path, { headers: { 'X-Auth-Token': state.token, 'Accept': 'application/json' } })
      .then(function (resp) {
        if (resp.status === 401 || resp.status === 403) {
          var err = new Error('This token may not read the dashboard (HTTP ' + resp.status + ').');
          err.auth = true;
          throw err;
        }
        return resp.json().then(function (body) {
          if (!resp.ok) {
            var msg = body && (body.message || JSON.stringify(body));
            for (var k in body) { if (body[k] && body[k].message) { msg = body[k].message; } }
            throw new Error(msg);
          }
          return body;
        });
      });
  }

  function status(text) { $('status').textContent = text; }

  // -- hosts: heat map and servers per host -------------------------------
  function colour(ratio) {
    var r = Math.max(0, Math.min(1, ratio));
    return 'hsl(' + Math.round(120 * (1 - r)) + ', 60%, 42%)';
  }

  function pct(res) { return res.capacity ? res.used / res.capacity : 0; }

  function groups(hosts) {
    var byCell = {};
    hosts.forEach(function (h) {
      var cell = byCell[h.cell] = byCell[h.cell] || {};
      var aggs = h.aggregates.length ? h.aggregates : ['(no aggregate)'];
      aggs.forEach(function (a) { (cell[a] = cell[a] || []).push(h); });
    });
    return byCell;
  }

  function renderHeatmap() {
    var data = state.hosts;
    if (!data) { return; }
    var rc = $('rc').value || data.resource_classes[0];
    var root = $('heatmap');
    root.textContent = '';
    var byCell = groups(data.hosts);
    Object.keys(byCell).sort().forEach(function (cellName) {
      Object.keys(byCell[cellName]).sort().forEach(function (agg) {
        var group = el('div', { 'class': 'group', 'data-cell': cellName, 'data-aggregate': agg });
        var list = byCell[cellName][agg];
        group.appendChild(el('h3', {}, cellName + ' / ' + agg + ' (' + list.length + ' hosts)'));
        var cells = el('div', { 'class': 'cells' });
        list.forEach(function (h) {
          var res = h.resources[rc];
          var cell = el('div', {
            'class': 'host', 'data-host': h.host, 'data-servers': h.servers,
            'data-used': res.used, 'data-capacity': res.capacity,
            title: h.host + ' (' + h.cell + ')\n' + rc + ': ' + res.used + ' / ' + res.capacity +
              '\nservers: ' + h.servers
          }, h.servers || '');
          cell.style.background = colour(pct(res));
          cells.appendChild(cell);
        });
        group.appendChild(cells);
        root.appendChild(group);
      });
    });
  }

  function renderServers() {
    var body = $('servers').querySelector('tbody');
    body.textContent = '';
    var busy = state.hosts.hosts.filter(function (h) { return h.servers > 0; })
      .sort(function (a, b) { return b.servers - a.servers || (a.host < b.host ? -1 : 1); })
      .slice(0, 200);
    busy.forEach(function (h) {
      var row = el('tr', { 'data-host': h.host });
      row.appendChild(el('td', {}, h.host));
      row.appendChild(el('td', {}, h.cell));
      row.appendChild(el('td', { 'class': 'servers' }, h.servers));
      state.hosts.resource_classes.forEach(function (rc) {
        var res = h.resources[rc];
        row.appendChild(el('td', {}, res.used + ' / ' + res.capacity));
      });
      body.appendChild(row);
    });
    if (!busy.length) {
      var empty = el('tr'); empty.appendChild(el('td', { colspan: 6, 'class': 'muted' }, 'No servers yet.'));
      body.appendChild(empty);
    }
  }

  function renderTotals() {
    var d = state.hosts;
    var parts = [d.hosts.length + ' hosts', d.servers + ' servers'];
    d.resource_classes.forEach(function (rc) {
      var t = d.totals[rc];
      parts.push(rc + ' ' + Math.round(100 * pct(t)) + '%');
    });
    $('totals').textContent = parts.join(' · ');
  }

  function loadHosts() {
    return api('api/hosts').then(function (data) {
      state.hosts = data;
      var select = $('rc');
      if (!select.options.length) {
        data.resource_classes.forEach(function (rc) { select.appendChild(el('option', { value: rc }, rc)); });
      }
      renderHeatmap(); renderServers(); renderTotals();
      status('updated ' + new Date().toLocaleTimeString());
    }).catch(fail);
  }

  // -- failed builds ------------------------------------------------------
  function loadFailures() {
    return api('api/failures').then(function (data) {
      var body = $('failures').querySelector('tbody');
      body.textContent = '';
      data.failed_builds.forEach(function (f) {
        var row = el('tr', { 'data-uuid': f.uuid });
        row.appendChild(el('td', { title: f.uuid }, f.name || f.uuid));
        row.appendChild(el('td', {}, f.cell));
        row.appendChild(el('td', {}, f.flavor));
        row.appendChild(el('td', {}, f.fault ? f.fault.code + ': ' + f.fault.message : '-'));
        var attempts = f.attempts.map(function (a) { return a.outcome; }).join(', ');
        row.appendChild(el('td', {}, f.attempts.length + (attempts ? ' (' + attempts + ')' : '')));
        body.appendChild(row);
      });
      if (!data.failed_builds.length) {
        var empty = el('tr'); empty.appendChild(el('td', { colspan: 5, 'class': 'muted' }, 'None.'));
        body.appendChild(empty);
      }
    }).catch(fail);
  }

  // -- decisions ------------------------------------------------------------
  function decisionLine(d) {
    var flavor = (d.flavor || {}).name || '?';
    var hosts = (d.instances || []).filter(function (i) { return i.host; })
      .map(function (i) { return i.host; });
    var total = (d.timings_ms || {}).total;
    return new Date().toLocaleTimeString() + ' ' + d.outcome + ' ' + flavor + ' x' + d.num_instances +
      ' placement:' + d.placement_candidates + ' -> ' + (hosts.join(', ') || '-') +
      (total !== undefined ? ' ' + total.toFixed(1) + 'ms' : '') + (d.message ? ' | ' + d.message : '');
  }

  function addDecision(d) {
    var list = $('decisions');
    var item = el('li', { 'class': 'outcome-' + d.outcome, 'data-request-id': d.request_id || '' }, decisionLine(d));
    item.dataset.hosts = (d.instances || []).map(function (i) { return i.host || ''; }).join(' ');
    list.insertBefore(item, list.firstChild);
    while (list.children.length > MAX_DECISIONS) { list.removeChild(list.lastChild); }
  }

  function parseEvents(buffer, onEvent) {
    var events = buffer.split('\n\n');
    var rest = events.pop();
    events.forEach(function (block) {
      var name = 'message', data = [];
      block.split('\n').forEach(function (line) {
        if (line.indexOf('event:') === 0) { name = line.slice(6).trim(); }
        else if (line.indexOf('data:') === 0) { data.push(line.slice(5).replace(/^ /, '')); }
      });
      if (data.length) { onEvent(name, data.join('\n')); }
    });
    return rest;
  }

  function follow() {
    if (!state.token) { return; }
    var controller = new AbortController();
    state.stream = controller;
    $('stream-state').textContent = 'connecting';
    fetch('api/events', { headers: { 'X-Auth-Token': state.token, 'Accept': 'text/event-stream' },
                          signal: controller.signal, cache: 'no-store' })
      .then(function (resp) {
        if (!resp.ok) { throw new Error('event stream: HTTP ' + resp.status); }
        $('stream-state').textContent = 'live';
        var reader = resp.body.getReader();
        var decoder = new TextDecoder();
        var buffer = '';
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) { return; }
            buffer = parseEvents(buffer + decoder.decode(chunk.value, { stream: true }), function (name, data) {
              if (name === 'decision') { addDecision(JSON.parse(data)); }
            });
            return pump();
          });
        }
        return pump();
      })
      .catch(function (err) { if (err.name !== 'AbortError') { $('stream-state').textContent = err.message; } })
      .then(function () {
        if (state.stream === controller && !controller.signal.aborted) {
          $('stream-state').textContent = 'reconnecting';
          state.timers.push(setTimeout(follow, 3000));
        }
      });
  }

  // -- capacity -------------------------------------------------------------
  function loadFlavors() {
    return api('../v2.1/flavors').then(function (data) {
      var select = $('flavor');
      select.textContent = '';
      data.flavors.forEach(function (f) { select.appendChild(el('option', { value: f.name }, f.name)); });
    }).catch(fail);
  }

  function table(title, counts) {
    var box = el('div');
    box.appendChild(el('h3', {}, title));
    var t = el('table');
    Object.keys(counts).sort().forEach(function (k) {
      var row = el('tr');
      row.appendChild(el('td', {}, k || '(none)'));
      row.appendChild(el('td', {}, counts[k]));
      t.appendChild(row);
    });
    box.appendChild(t);
    return box;
  }

  function askCapacity(event) {
    event.preventDefault();
    var flavor = $('flavor').value;
    var out = $('capacity');
    out.textContent = 'asking the scheduler...';
    api('api/capacity?flavor=' + encodeURIComponent(flavor)).then(function (data) {
      var a = data.capacity[0];
      var cellNames = {};
      ((state.hosts || {}).cells || []).forEach(function (c) { cellNames[c.uuid] = c.name; });
      var perCell = {};
      Object.keys(a.per_cell).forEach(function (u) { perCell[cellNames[u] || u] = a.per_cell[u]; });
      out.textContent = '';
      out.appendChild(el('div', { 'class': 'cap-total', 'data-total': a.total },
                         a.total + ' more ' + a.flavor.name));
      out.appendChild(el('div', { 'class': 'muted' }, a.hosts_with_room + ' hosts with room; runs out first: ' +
                         (a.runs_out_first || '-')));
      out.appendChild(table('per cell', perCell));
      out.appendChild(table('per availability zone', a.per_availability_zone));
      out.appendChild(table('per aggregate', a.per_aggregate));
    }).catch(function (err) { out.textContent = err.message; });
  }

  // -- sign in / out --------------------------------------------------------
  function fail(err) {
    status(err.message);
    if (err.auth) { signOut(err.message); }
  }

  function start() {
    $('login').hidden = true;
    $('board').hidden = false;
    $('signout').hidden = false;
    status('loading');
    loadHosts(); loadFailures(); loadFlavors();
    api('api/decisions').then(function (data) {
      data.decisions.slice().reverse().forEach(addDecision);
    }).catch(fail);
    follow();
    state.timers.push(setInterval(loadHosts, HOSTS_EVERY_MS));
    state.timers.push(setInterval(loadFailures, FAILURES_EVERY_MS));
  }

  function signOut(message) {
    state.timers.forEach(function (t) { clearInterval(t); clearTimeout(t); });
    state.timers = [];
    var stream = state.stream; state.stream = null;
    if (stream) { stream.abort(); }
    state.token = null;
    sessionStorage.removeItem('nimbus-dashboard-token');
    $('board').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = typeof message === 'string' ? message : '';
    status('not signed in');
  }

  function init() {
    var match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem('nimbus-dashboard-token', decodeURIComponent(match[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    $('rc').addEventListener('change', renderHeatmap);
    $('capacity-form').addEventListener('submit', askCapacity);
    $('signout').addEventListener('click', function () { signOut(); });
    $('login').addEventListener('submit', function (event) {
      event.preventDefault();
      state.token = $('token').value;
      sessionStorage.setItem('nimbus-dashboard-token', state.token);
      start();
    });
    state.token = sessionStorage.getItem('nimbus-dashboard-token');
    if (state.token) { start(); } else { $('login').hidden = false; }
  }

  init();
})();
