// Behaviour of the page `crec dump --format html` writes (embedded into it).
// Clicking a node of the graph shows the command's details, read from the JSON
// in #crec-data. Opening the page with "#selftest" (or "#selftest=c<id>")
// clicks a node after load and records what the details panel shows in
// <pre id="crec-selftest">, so a headless browser can check the page.
// With a profile (crec dump --profile, JSON in #crec-profile, docs/profile.md),
// nodes are shaded by device time, the critical path is marked, a timeline of
// one replay is drawn, and "#selftest=bar:c<id>" clicks that command's first bar.
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

  // the profile, if the page has one: per command id its times; the critical path
  var profileEl = document.getElementById('crec-profile');
  var prof = profileEl ? JSON.parse(profileEl.textContent) : null;
  var timed = {};
  var critical = {};
  var profileWarnings = [];
  if (prof) {
    if (prof.format !== 'crec-profile' || prof.version !== 1)
      profileWarnings.push('this is not a version 1 crec profile (format ' + prof.format + ', version ' + prof.version + ')');
    (prof.commands || []).forEach(function (t) {
      if (byId['c' + t.id]) timed[t.id] = t;
      else profileWarnings.push('the profile times command #' + t.id + ', which this program lacks: is it another program\'s?');
    });
    ((prof.critical_path || {}).commands || []).forEach(function (id) { if (byId['c' + id]) critical[id] = true; });
  }
  // "1 byte", "2 bytes": a count and its noun, singular for one
  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many || one + 's'); }
  function us(x) { return (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0)) + ' \u00b5s'; }

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
        (r.end === null ? '' : ', ' + plural(r.end - r.offset, 'byte'));
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
      row(t, 'shared memory', typeof c.shared === 'number' ? plural(c.shared, 'byte') : c.shared + ' bytes');
      if (c.cluster) row(t, 'cluster', dims(c.cluster));
      if (c.early_start) row(t, 'early start', 'may launch as the launches before it drain (programmatic edges, sm_90 and later; dashed in the graph)');
    }
    if (c.dst) row(t, 'destination', range(c.dst));
    if (c.src) row(t, 'source', range(c.src));
    if (c.bytes !== undefined) row(t, 'bytes', c.bytes === null ? 'to the end of the buffer' : String(c.bytes));
    if (c.value !== undefined) row(t, 'value', c.value + ' (' + c.element_size + '-byte elements)');
    if (c.predicate) row(t, c.kind === 'switch' ? 'index' : 'predicate', range(c.predicate));
    if (c.cases) row(t, 'cases', c.cases.join(', '));
    // a loop's own limit (crec.max_iterations); without one, the run's applies
    if (c.kind === 'while')
      row(t, 'iteration limit', c.max_iterations === undefined ? 'the run\'s (crec run --loop-limit, ' +
          'crec_record_options.max_loop_iterations)' : c.max_iterations === 'unlimited' ? 'none (unlimited)'
          : plural(c.max_iterations, 'iteration') + ' (its own: crec.max_iterations)');
    if (c.gemm) {
      var g = c.gemm;
      row(t, 'product', g.type + ' M=' + g.m + ' N=' + g.n + ' K=' + g.k + (g.batch > 1 ? ', batch ' + g.batch : '') +
          (g.transpose_a ? ', A transposed' : '') + (g.transpose_b ? ', B transposed' : ''));
      row(t, 'scales', 'alpha ' + g.alpha + ', beta ' + g.beta + (g.accumulate && g.beta !== 0 ? ' (C is D)' : ''));
      row(t, 'epilogue', g.epilogue);
      row(t, 'workspace', plural(g.workspace_bytes, 'byte'));
    }
    if (c.fft) {
      var f = c.fft;
      row(t, 'transform', f.precision + ' ' + f.type + ' ' + f.length.join('x') + (f.batch > 1 ? ', batch ' + f.batch : ''));
      if (f.scale !== 1) row(t, 'scale', String(f.scale));
      row(t, 'workspace', plural(f.workspace_bytes, 'byte'));
    }
    if (c.conv) {
      var v = c.conv;
      row(t, 'convolution', v.type + ' ' + v.kind + ' ' + v.layout + ', N=' + v.batch + ' C=' + v.in_channels + ' K=' +
          v.out_channels + (v.groups > 1 ? ', groups ' + v.groups : ''));
      row(t, 'sizes', 'input ' + v.in_size.join('x') + ', filter ' + v.filter_size.join('x') + ', output ' + v.out_size.join('x'));
      row(t, 'stride, padding, dilation', v.stride.join('x') + ', ' + v.padding.join('x') + ', ' + v.dilation.join('x'));
      if (v.bias || v.activation !== 'none') row(t, 'epilogue', (v.bias ? 'bias' : '') + (v.bias && v.activation !== 'none' ? ' + ' : '') + (v.activation !== 'none' ? v.activation : ''));
      row(t, 'algorithm', 'by ' + v.algorithm + ', workspace ' + plural(v.workspace_bytes, 'byte'));
    }
    if (c.cholesky) {
      var h = c.cholesky;
      row(t, 'factorization', h.type + ' Cholesky, ' + h.uplo + ', n=' + h.n + (h.batch > 1 ? ', batch ' + h.batch : ''));
      row(t, 'workspace', plural(h.workspace_bytes, 'byte'));
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
    if (prof) profileRows(t, c);
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

  // what the profile says of command c, as rows of the details table
  function profileRows(t, c) {
    var p = timed[c.id];
    if (!p) {
      row(t, 'device time', 'none in the profile');
      return;
    }
    var d = p.device_us;
    row(t, 'device time', us(d.p50) + ' per replay (p50; min ' + us(d.min) + ', max ' + us(d.max) + ')');
    row(t, 'starts', us(p.start_us) + ' into the replay');
    row(t, 'graph nodes', String(p.nodes));
    row(t, 'beside it', p.concurrent ? 'up to ' + plural(p.concurrent, 'node') + ' of other commands' : 'nothing else ran');
    if (p.iterations)
      row(t, 'iterations', p.iterations.p50 + ' per replay (min ' + p.iterations.min + ', max ' + p.iterations.max + ')' +
          (p.per_iteration_us !== undefined ? ', ' + us(p.per_iteration_us) + ' each' : ''));
    row(t, 'critical path', critical[c.id] ? 'on it' : 'off it');
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
    Array.prototype.forEach.call(document.querySelectorAll('#timeline rect.bar'), function (r) {
      r.classList.toggle('selected', r.getAttribute('data-command') === id);
    });
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

  // fitting: the whole graph in its pane both ways, centred; a small graph grows
  // (up to twice its size), a large one shrinks
  var fit = document.getElementById('fit');
  var drawing = graph.querySelector('svg');
  var natural = drawing ? {w: drawing.width.baseVal.value, h: drawing.height.baseVal.value} : null;
  var scale = 1;
  function layout() {
    graph.classList.toggle('fit', fit.checked);
    if (!drawing || !natural.w || !natural.h) return;
    if (!fit.checked) {
      drawing.style.width = drawing.style.height = '';
      scale = 1;
      return;
    }
    var cs = getComputedStyle(graph);
    var w = graph.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    var h = graph.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
    scale = Math.max(0.01, Math.min(w / natural.w, h / natural.h, 2));
    drawing.style.width = natural.w * scale + 'px';
    drawing.style.height = natural.h * scale + 'px';
  }
  fit.addEventListener('change', layout);
  window.addEventListener('resize', layout);

  // ---- the profile: summary, shading, critical path, timeline ----
  var SVG = 'http://www.w3.org/2000/svg';
  function svgEl(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    return e;
  }
  // white to red by the share of the slowest command's time
  function heat(x) {
    var a = [255, 245, 240], b = [203, 24, 29];
    return 'rgb(' + a.map(function (v, i) { return Math.round(v + (b[i] - v) * x); }).join(',') + ')';
  }
  // a command's device time over the slowest command's (0 without a time)
  var slowest = 0;
  Object.keys(timed).forEach(function (id) { slowest = Math.max(slowest, timed[id].device_us.p50); });
  function share(id) { return timed[id] && slowest > 0 ? timed[id].device_us.p50 / slowest : 0; }
  function shade(on) {
    data.commands.forEach(function (c) {
      var shape = document.querySelector('#c' + c.id + ' polygon, #c' + c.id + ' ellipse');
      if (!shape) return;
      if (!shape.hasAttribute('data-kind-fill')) shape.setAttribute('data-kind-fill', shape.getAttribute('fill') || '');
      var p = timed[c.id];
      shape.setAttribute('fill', !on ? shape.getAttribute('data-kind-fill')
                                     : p ? heat(share(c.id)) : '#f1f3f5');
      document.getElementById('c' + c.id).classList.toggle('timed', on && !!p);
    });
    // the legend names the kinds' colours, which the shading replaces
    document.getElementById('legend').style.display = on ? 'none' : '';
  }
  var lanes = 0, bars = 0;
  function drawTimeline(box) {
    var spans = (prof.timeline || []).filter(function (s) { return byId['c' + s.command]; });
    spans.sort(function (x, y) { return x.start_us - y.start_us || x.end_us - y.end_us; });
    // one row per stream of concurrency: a span goes to the first row free at its start
    var ends = [];
    var rows = spans.map(function (s) {
      for (var r = 0; r < ends.length; r++) if (ends[r] <= s.start_us) break;
      ends[r] = s.end_us;
      return r;
    });
    lanes = ends.length;
    var end = 0;
    spans.forEach(function (s) { end = Math.max(end, s.end_us); });
    var left = 60, width = 900, rowH = 18, top = 22;
    var scale = end > 0 ? width / end : 1;
    var svg = svgEl('svg', {width: left + width + 20, height: top + lanes * rowH + 8, 'class': 'timeline'});
    // axis: about 8 ticks at a round step
    var step = Math.pow(10, Math.floor(Math.log(end / 8 || 1) / Math.LN10));
    if (end / step > 40) step *= 5; else if (end / step > 16) step *= 2;
    for (var x = 0; x <= end + 1e-9; x += step) {
      svg.appendChild(svgEl('line', {x1: left + x * scale, x2: left + x * scale, y1: top - 4, y2: top + lanes * rowH, 'class': 'tick'}));
      var tickText = svgEl('text', {x: left + x * scale, y: top - 8, 'class': 'tick'});
      tickText.textContent = (Math.round(x * 100) / 100) + ' \u00b5s';
      svg.appendChild(tickText);
    }
    for (var r = 0; r < lanes; r++) {
      var name = svgEl('text', {x: 4, y: top + r * rowH + 13, 'class': 'lane'});
      name.textContent = 'stream ' + r;
      svg.appendChild(name);
    }
    spans.forEach(function (s, i) {
      var c = byId['c' + s.command];
      var rect = svgEl('rect', {x: left + s.start_us * scale, y: top + rows[i] * rowH + 2,
                                width: Math.max(1, (s.end_us - s.start_us) * scale), height: rowH - 4,
                                'class': 'bar' + (critical[s.command] ? ' critical' : ''),
                                'data-command': 'c' + s.command, fill: heat(0.15 + 0.85 * share(s.command))});
      var tip = svgEl('title', {});
      tip.textContent = label(c) + ': ' + us(s.start_us) + ' to ' + us(s.end_us) +
          (s.iteration !== undefined ? ', iteration ' + s.iteration : '');
      rect.appendChild(tip);
      rect.addEventListener('click', function () { select('c' + s.command); });
      svg.appendChild(rect);
      bars++;
    });
    box.appendChild(el('h2', null, 'one replay, ' + us(end) + ' of device time from its first node'));
    box.appendChild(svg);
  }
  if (prof) {
    document.body.classList.add('profiled');
    var head = document.getElementById('profile');
    var cp = prof.critical_path || {commands: [], us: 0, share: 0};
    var parts = [plural(prof.iters, 'profiled replay') + (prof.device ? ' on ' + prof.device : '')];
    if (prof.replay_us) {
      var plain = prof.replay_us.plain.p50, profiled = prof.replay_us.profiled.p50;
      parts.push('a replay takes ' + us(plain) + ' (p50; ' + us(profiled) + ' under the profiler' +
                 (plain > 0 ? ', +' + Math.round((profiled / plain - 1) * 100) + '%' : '') + ')');
    }
    parts.push('critical path ' + us(cp.us) + ', ' + Math.round(cp.share * 100) + '% of the device span: ' +
               cp.commands.map(function (id) { return '#' + id; }).join(' \u2192 '));
    if (prof.idle_us !== undefined) parts.push('idle ' + us(prof.idle_us));
    if (prof.host_us) {
      var h = prof.host_us, u = h.updates || {};
      parts.push('host: binding checks ' + us(h.binding_checks || 0) + ', updates ' +
                 us((u.per_node || 0) + (u.whole_graph || 0) + (u.device || 0)) + ', launch ' + us(h.launch || 0));
    }
    head.appendChild(el('p', null, 'Profile: ' + parts.join(' \u00b7 ') + '.'));
    profileWarnings.forEach(function (w) { head.appendChild(el('p', 'warning', w)); });
    var toggle = el('label');
    var box = el('input');
    box.type = 'checkbox';
    box.id = 'shade';
    box.checked = true;
    toggle.appendChild(box);
    toggle.appendChild(document.createTextNode(' shade nodes by device time (darker is slower; grey: none)'));
    head.appendChild(toggle);
    box.addEventListener('change', function () { shade(box.checked); });
    shade(true);
    Object.keys(critical).forEach(function (id) { mark(id, 'critical'); });
    drawTimeline(document.getElementById('timeline'));
  }

  layout(); // after the profile's header and timeline took their room

  if (location.hash.indexOf('#selftest') === 0) {
    var want = location.hash.split('=')[1];
    var viaBar = want && want.indexOf('bar:') === 0;
    if (viaBar) want = want.slice(4);
    if (!want) {
      var first = graph.querySelector('g.node[id^="c"]');
      want = first ? first.id : '';
    }
    var g = viaBar ? document.querySelector('#timeline rect.bar[data-command="' + want + '"]') : document.getElementById(want);
    var out = el('pre');
    out.id = 'crec-selftest';
    if (g) g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    var ok = g && panel.getAttribute('data-command') === want && current === want;
    var extra = '';
    if (prof) {
      var crit = Array.prototype.map.call(graph.querySelectorAll('g.node.critical'), function (n) { return n.id; });
      extra = '\ncritical: ' + crit.join(' ') + '\nlanes: ' + lanes + '\nbars: ' + bars + '\nselected bars: ' +
          document.querySelectorAll('#timeline rect.bar.selected').length + '\nshaded: ' +
          graph.querySelectorAll('g.node.timed').length +
          (profileWarnings.length ? '\nwarnings: ' + profileWarnings.join('; ') : '');
    }
    // where the fitted graph sits in its pane: inside it, with equal margins
    if (drawing && fit.checked) {
      var pane = graph.getBoundingClientRect(), box = drawing.getBoundingClientRect();
      var cs2 = getComputedStyle(graph);
      var left = box.left - pane.left - parseFloat(cs2.paddingLeft), right = pane.right - box.right - parseFloat(cs2.paddingRight);
      var top = box.top - pane.top - parseFloat(cs2.paddingTop), bottom = pane.bottom - box.bottom - parseFloat(cs2.paddingBottom);
      var inside = left >= -1 && right >= -1 && top >= -1 && bottom >= -1;
      var centred = Math.abs(left - right) <= 2 && Math.abs(top - bottom) <= 2;
      extra += '\nfit: ' + (inside ? 'inside the pane' : 'outside the pane') + ', ' + (centred ? 'centred' : 'off centre') +
          ', scale ' + scale.toFixed(2) + ' (margins ' + [left, right, top, bottom].map(Math.round).join(' ') + ')';
    }
    out.setAttribute('data-result', ok ? 'pass' : 'fail');
    out.setAttribute('data-errors', String(errors.length));
    out.textContent = (ok ? 'selected ' + want + (viaBar ? ' through its bar' : '') + '\n' : 'no node ' + want + '\n') +
        panel.innerText + extra + (errors.length ? '\nerrors: ' + errors.join('; ') : '');
    document.body.appendChild(out);
  }
})();
