// Behaviour of the page `crec dump --format html` writes (embedded into it).
// Clicking a node of the graph shows the command's details, read from the JSON
// in #crec-data. Opening the page with "#selftest" (or "#selftest=c<id>")
// clicks a node after load and records what the details panel shows in
// <pre id="crec-selftest">, so a headless browser can check the page.
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });

  var data = JSON.parse(document.getElementById('crec-data').textContent);
  var panel = document.getElementById('details');
  var graph = document.getElementById('graph');
  var byId = {};
  var users = {};
  data.commands.forEach(function (c) {
    byId['c' + c.id] = c;
    users[c.id] = [];
  });
  data.commands.forEach(function (c) {
    c.deps.forEach(function (d) { if (users[d]) users[d].push(c.id); });
  });
  var regions = {};
  data.regions.forEach(function (r) { regions[r.id] = r; });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function code(text) { return el('code', null, text); }
  function label(c) { return '#' + c.id + ' ' + c.kind + " '" + c.name + "'"; }
  function dim(d) { return typeof d === 'number' ? String(d) : d; }
  function dims(a) { return a.map(dim).join(' \u00d7 '); }
  function range(r) {
    return r.buffer + '[' + r.offset + '..' + (r.end === null ? 'end' : r.end) + ')' +
        (r.end === null ? '' : ', ' + (r.end - r.offset) + ' bytes');
  }
  function regionText(id) {
    var r = regions[id];
    if (!r || r.parent === null) return 'program body';
    var p = byId['c' + r.parent];
    return r.role + (r.role === 'branch' ? ' ' + r.index : '') + ' of ' + (p ? label(p) : '#' + r.parent);
  }
  function link(id) {
    var c = byId['c' + id];
    var a = el('a', null, c ? label(c) : '#' + id);
    a.setAttribute('data-target', 'c' + id);
    a.addEventListener('click', function () { select('c' + id); });
    return a;
  }
  function row(table, name, value) {
    var tr = el('tr');
    tr.appendChild(el('th', null, name));
    var td = el('td');
    if (typeof value === 'string') td.appendChild(code(value)); else td.appendChild(value);
    tr.appendChild(td);
    table.appendChild(tr);
  }
  function list(ids) {
    var span = el('span');
    if (!ids.length) span.textContent = 'none';
    ids.forEach(function (id, i) {
      if (i) span.appendChild(document.createTextNode(', '));
      span.appendChild(link(id));
    });
    return span;
  }

  function show(c) {
    panel.textContent = '';
    panel.setAttribute('data-command', 'c' + c.id);
    panel.appendChild(el('h2', null, label(c)));
    var t = el('table');
    row(t, 'kind', c.kind);
    row(t, 'region', regionText(c.region));
    if (c.kernel) {
      row(t, 'kernel', c.kernel.entry + ' (module ' + c.kernel.module + ', ' + c.kernel.format + ')');
      row(t, 'grid', dims(c.grid));
      row(t, 'block', dims(c.block));
      row(t, 'shared memory', dim(c.shared) + ' bytes');
      if (c.cluster) row(t, 'cluster', dims(c.cluster));
    }
    if (c.dst) row(t, 'destination', range(c.dst));
    if (c.src) row(t, 'source', range(c.src));
    if (c.bytes !== undefined) row(t, 'bytes', c.bytes === null ? 'to the end of the buffer' : String(c.bytes));
    if (c.value !== undefined) row(t, 'value', c.value + ' (' + c.element_size + '-byte elements)');
    if (c.predicate) row(t, c.kind === 'switch' ? 'index' : 'predicate', range(c.predicate));
    if (c.cases) row(t, 'cases', c.cases.join(', '));
    if (c.gemm) {
      var g = c.gemm;
      row(t, 'product', g.type + ' M=' + g.m + ' N=' + g.n + ' K=' + g.k + (g.batch > 1 ? ', batch ' + g.batch : '') +
          (g.transpose_a ? ', A transposed' : '') + (g.transpose_b ? ', B transposed' : ''));
      row(t, 'scales', 'alpha ' + g.alpha + ', beta ' + g.beta + (g.accumulate && g.beta !== 0 ? ' (C is D)' : ''));
      row(t, 'epilogue', g.epilogue);
      row(t, 'workspace', g.workspace_bytes + ' bytes');
    }
    if (c.collective) {
      var k = c.collective;
      row(t, 'collective', k.op + (k.reduction ? ' (' + k.reduction + ')' : '') + ' of ' + k.type +
          (k.async !== 'no' ? ', async ' + k.async : ''));
      row(t, 'communicator', k.communicator + ' (' + k.ranks + (k.ranks === 1 ? ' rank)' : ' ranks)'));
    }
    if (c.custom) row(t, 'target', c.custom.target);
    if (c.regions) row(t, 'regions', c.regions.map(function (r) {
      var x = regions[r];
      return x ? x.role + (x.role === 'branch' ? ' ' + x.index : '') : String(r);
    }).join(', '));
    row(t, 'depends on', list(c.deps));
    row(t, 'needed by', list(users[c.id]));
    panel.appendChild(t);
    if (c.operands) {
      panel.appendChild(el('h3', null, 'operands'));
      var ot = el('table');
      ot.className = 'args';
      c.operands.forEach(function (o, i) {
        var tr = el('tr');
        tr.appendChild(el('td', null, String(i)));
        var td = el('td');
        td.appendChild(code(range(o)));
        tr.appendChild(td);
        tr.appendChild(el('td', 'access-' + o.access, o.access));
        ot.appendChild(tr);
      });
      panel.appendChild(ot);
    }
    if (c.args) {
      panel.appendChild(el('h3', null, 'arguments'));
      var at = el('table');
      at.className = 'args';
      var head = el('tr');
      ['#', 'argument', 'access'].forEach(function (h) { head.appendChild(el('th', null, h)); });
      at.appendChild(head);
      c.args.forEach(function (a, i) {
        var tr = el('tr');
        tr.appendChild(el('td', null, String(i)));
        var td = el('td');
        if (a.kind === 'buffer') td.appendChild(code(range(a)));
        else if (a.kind === 'scalar') td.appendChild(code('scalar ' + a.name + ' : ' + a.type));
        else td.appendChild(code(a.type + ' ' + a.value));
        tr.appendChild(td);
        tr.appendChild(el('td', a.access ? 'access-' + a.access : null, a.access || 'by value'));
        at.appendChild(tr);
      });
      panel.appendChild(at);
    }
  }

  var current = null;
  function mark(id, cls) {
    var g = document.getElementById('c' + id);
    if (g) g.classList.add(cls);
  }
  function select(id) {
    var c = byId[id];
    if (!c) return;
    Array.prototype.forEach.call(graph.querySelectorAll('g.node.selected, g.node.dep, g.node.user'),
        function (g) { g.classList.remove('selected', 'dep', 'user'); });
    current = id;
    mark(c.id, 'selected');
    c.deps.forEach(function (d) { mark(d, 'dep'); });
    users[c.id].forEach(function (u) { mark(u, 'user'); });
    show(c);
  }

  Array.prototype.forEach.call(graph.querySelectorAll('g.node'), function (g) {
    if (!byId[g.id]) return;
    g.addEventListener('click', function () { select(g.id); });
  });

  // legend: the colours the graph itself uses for each kind
  var legend = document.getElementById('legend');
  var seen = {};
  data.commands.forEach(function (c) {
    if (seen[c.kind]) return;
    var shape = document.querySelector('#c' + c.id + ' polygon, #c' + c.id + ' ellipse');
    if (!shape) return;
    seen[c.kind] = true;
    var item = el('span');
    var sw = el('span', 'swatch');
    sw.style.background = shape.getAttribute('fill') || '#fff';
    item.appendChild(sw);
    item.appendChild(document.createTextNode(c.kind));
    legend.appendChild(item);
  });

  var fit = document.getElementById('fit');
  fit.addEventListener('change', function () { graph.classList.toggle('fit', fit.checked); });
  graph.classList.toggle('fit', fit.checked);

  if (location.hash.indexOf('#selftest') === 0) {
    var want = location.hash.split('=')[1];
    if (!want) {
      var first = graph.querySelector('g.node[id^="c"]');
      want = first ? first.id : '';
    }
    var g = document.getElementById(want);
    var out = el('pre');
    out.id = 'crec-selftest';
    if (g) g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    var ok = g && panel.getAttribute('data-command') === want && current === want;
    out.setAttribute('data-result', ok ? 'pass' : 'fail');
    out.setAttribute('data-errors', String(errors.length));
    out.textContent = (ok ? 'selected ' + want + '\n' : 'no node ' + want + '\n') + panel.innerText +
        (errors.length ? '\nerrors: ' + errors.join('; ') : '');
    document.body.appendChild(out);
  }
})();
