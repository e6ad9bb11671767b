/* SPDX-License-Identifier: GPL-2.0-only */
/* report.js -- the charts of a pdimon HTML report, as Vega specifications drawn from the data
 * the page inlines (#pdimon-data): the phases on the step's time axis with their deviation
 * scores, ranks x phases, and a program's trends per call site, log-log. Vega runs its
 * expressions with its interpreter (no eval: the page's policy forbids it). */
(function () {
  'use strict';
  var holder = document.getElementById('pdimon-data');
  var data = holder ? JSON.parse(holder.textContent) : {};
  var RED = '#d6604d', BLUE = '#4393c3';

  function draw(container, spec, renderer) {
    var view = new vega.View(vega.parse(spec, null, { ast: true }), {
      renderer: renderer || 'svg', container: container, hover: true, expr: vega.expressionInterpreter
    });
    return view.runAsync().then(function () {
      container.setAttribute('data-drawn', 'yes');
    }, function (err) {
      container.textContent = 'This chart could not be drawn: ' + err.message;
      container.setAttribute('data-drawn', 'failed');
    });
  }

  /* phases as bars on the time axis: width = the phase's window, height = its score */
  function timeline(t) {
    var faulty = t.phases.filter(function (p) { return p.faulty; });
    return {
      width: 860, height: 170, padding: 5, autosize: 'pad',
      data: [
        { name: 'phases', values: t.phases },
        { name: 'scored', source: 'phases', transform: [{ type: 'filter', expr: 'datum.score != null' }] },
        { name: 'faulty', values: faulty }
      ],
      scales: [
        { name: 'x', type: 'linear', domain: { data: 'phases', fields: ['start', 'end'] }, range: 'width', zero: false },
        { name: 'y', type: 'linear', domain: { data: 'scored', field: 'score' }, range: 'height', nice: true, zero: true }
      ],
      axes: [
        { orient: 'bottom', scale: 'x', title: t.timed ? 'seconds after the step\u2019s first MPI call' : 'phase number' },
        { orient: 'left', scale: 'y', title: 'deviation score', grid: true, gridOpacity: 0.3 }
      ],
      marks: [
        { type: 'rect', from: { data: 'phases' }, encode: { enter: {
          x: { scale: 'x', field: 'start' }, x2: { scale: 'x', field: 'end' }, y: { value: 0 }, y2: { signal: 'height' },
          fill: { signal: "datum.faulty ? '#fddbc7' : (datum.index % 2 ? '#f3f3f3' : '#fafafa')" },
          tooltip: { signal: "{'phase': datum.index, 'from (s)': format(datum.start, '.2f'), 'to (s)': format(datum.end, '.2f'), 'score': datum.score == null ? 'not compared' : format(datum.score, '.3g')}" }
        } } },
        { type: 'rect', from: { data: 'scored' }, encode: { enter: {
          x: { scale: 'x', field: 'start' }, x2: { scale: 'x', field: 'end' },
          y: { scale: 'y', field: 'score' }, y2: { scale: 'y', value: 0 },
          fill: { signal: "datum.faulty ? '" + RED + "' : '" + BLUE + "'" }, stroke: { value: 'white' }, strokeWidth: { value: 0.5 },
          tooltip: { signal: "{'phase': datum.index, 'score': format(datum.score, '.3g')}" }
        } } },
        { type: 'text', from: { data: 'faulty' }, encode: { enter: {
          x: { scale: 'x', signal: '(datum.start + datum.end) / 2' }, y: { value: -4 }, align: { value: 'center' },
          text: { signal: (t.hang ? "'hung in phase '" : "'faulty phase '") + " + datum.index" }, fill: { value: RED }, fontWeight: { value: 'bold' }
        } } }
      ]
    };
  }

  /* one rect per (row, phase): the share of the phase the row's ranks spent in MPI */
  function heatmap(h) {
    var cells = [], labels = [], phases = h.labels;
    h.rows.forEach(function (r) {
      labels.push(r.ranks);
      r.mpi.forEach(function (v, k) {
        if (v !== null) cells.push({ row: r.ranks, phase: phases[k], v: v, count: r.count });
      });
    });
    var band = Math.max(3, Math.min(18, Math.floor(640 / Math.max(1, labels.length))));
    return {
      spec: {
        width: Math.max(200, Math.min(860, phases.length * 24)), height: band * labels.length, padding: 5, autosize: 'pad',
        data: [{ name: 'cells', values: cells }, { name: 'faulty', values: h.faulty >= 0 && h.faulty < phases.length ? [{ phase: phases[h.faulty] }] : [] }],
        scales: [
          { name: 'x', type: 'band', domain: phases, range: 'width' },
          { name: 'y', type: 'band', domain: labels, range: 'height' },
          { name: 'color', type: 'linear', domain: [0, 1], range: { scheme: 'blues' }, zero: true }
        ],
        axes: [
          { orient: 'bottom', scale: 'x', title: 'phase', labelOverlap: true },
          { orient: 'left', scale: 'y', title: 'ranks', labelLimit: 180, labelOverlap: true }
        ],
        legends: [{ fill: 'color', title: 'share in MPI', format: '.0%', gradientLength: 120 }],
        marks: [
          { type: 'rect', from: { data: 'cells' }, encode: { enter: {
            x: { scale: 'x', field: 'phase' }, width: { scale: 'x', band: 1 },
            y: { scale: 'y', field: 'row' }, height: { scale: 'y', band: 1 },
            fill: { scale: 'color', field: 'v' },
            tooltip: { signal: "{'ranks': datum.row, 'phase': datum.phase, 'in MPI': format(datum.v, '.0%')}" }
          } } },
          { type: 'rect', from: { data: 'faulty' }, encode: { enter: {
            x: { scale: 'x', field: 'phase' }, width: { scale: 'x', band: 1 }, y: { value: 0 }, y2: { signal: 'height' },
            fill: { value: 'transparent' }, stroke: { value: RED }, strokeWidth: { value: 2 }
          } } }
        ]
      },
      cells: cells.length
    };
  }

  /* one small log-log chart per call site: the runs' points and the fitted a + b x^c */
  function trend(s) {
    var xs = s.points.map(function (p) { return p[0]; });
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs), curve = [];
    for (var i = 0; i <= 48; i++) {
      var x = lo * Math.pow(hi / lo, i / 48), y = s.fit.a + s.fit.b * Math.pow(x, s.fit.c);
      if (y > 0 && isFinite(y)) curve.push({ x: x, y: y });
    }
    var colour = s.flagged ? RED : BLUE;
    return {
      width: 250, height: 160, padding: 5, autosize: 'pad',
      data: [{ name: 'points', values: s.points.map(function (p) { return { x: p[0], y: p[1] }; }) },
             { name: 'curve', values: curve }],
      scales: [
        { name: 'x', type: 'log', domain: { fields: [{ data: 'points', field: 'x' }, { data: 'curve', field: 'x' }] }, range: 'width', nice: false },
        { name: 'y', type: 'log', domain: { fields: [{ data: 'points', field: 'y' }, { data: 'curve', field: 'y' }] }, range: 'height', nice: false }
      ],
      axes: [{ orient: 'bottom', scale: 'x', title: data.trends.feature, tickCount: 4 },
             { orient: 'left', scale: 'y', title: s.metric + ' per task', tickCount: 4 }],
      marks: [
        { type: 'line', from: { data: 'curve' }, encode: { enter: {
          x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' }, stroke: { value: colour }, strokeWidth: { value: 1.5 } } } },
        { type: 'symbol', from: { data: 'points' }, encode: { enter: {
          x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' }, fill: { value: '#222' }, size: { value: 30 },
          tooltip: { signal: "{'x': datum.x, 'y': format(datum.y, '.4g')}" } } } }
      ]
    };
  }

  var el;
  if (data.timeline && (el = document.getElementById('timeline-chart')))
    draw(el, timeline(data.timeline));
  if (data.heatmap && (el = document.getElementById('heatmap-chart'))) {
    var h = heatmap(data.heatmap);
    draw(el, h.spec, h.cells > 4000 ? 'canvas' : 'svg');
  }
  if (data.trends && (el = document.getElementById('trends-chart'))) {
    var container = el;
    Promise.all(data.trends.sites.map(function (s, i) {
      var box = document.createElement('figure'), cap = document.createElement('figcaption');
      var chart = document.createElement('div');
      box.className = s.flagged ? 'trend flagged' : 'trend';
      cap.textContent = (i + 1) + '. ' + s.site + ' \u2014 ' + s.metric + (s.flagged ? ' (grows faster than the rest)' : '');
      chart.className = 'trend-chart';
      box.appendChild(cap);
      box.appendChild(chart);
      container.appendChild(box);
      return draw(chart, trend(s));
    })).then(function () {
      /* the section is drawn once every site's chart is, failed if one of them failed */
      var failed = container.querySelector('[data-drawn="failed"]');
      container.setAttribute('data-drawn', failed ? 'failed' : 'yes');
    });
  }
})();
