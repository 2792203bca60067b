/*
 * stacksift dashboard: one page, hash routes, plain DOM. Talks only to this server's
 * /api/v1 (docs/openapi.yaml) with the read token kept in localStorage; nothing is
 * fetched from anywhere else, so it works offline.
 *
 *   #/issues?app=&version=&kind=&status=&q=&sort=   issue list (filters, sorting, sparklines)
 *   #/issues/ID                                     one issue: sample stack, breakdowns, status
 *   #/reports/UUID                                  raw and symbolicated text side by side
 *   #/dsyms                                         UUIDs that reports wait for
 *   #/privacy?tag=&build=&new=1&q=                  privacy-API call sites per API and build
 *
 * Every value from the API goes into the page as text (textContent), never as HTML.
 */
(function () {
  'use strict';

  var TOKEN_KEY = 'stacksift.token';
  var ADMIN_KEY = 'stacksift.adminToken';   // sessionStorage: only for status changes
  var view = document.getElementById('view');
  var renderSeq = 0;   // a newer render makes older async work drop its results

  /* ---- DOM helpers ------------------------------------------------------------------- */

  // h('tag.class#id', {attr: v, onclick: fn}, child...) - children are nodes or text.
  function h(spec, attrs) {
    var m = /^([a-z0-9]+)((?:[.#][\w-]+)*)$/i.exec(spec);
    var el = document.createElement(m ? m[1] : spec);
    if (m && m[2]) {
      m[2].replace(/([.#])([\w-]+)/g, function (_, k, v) {
        if (k === '.') el.classList.add(v); else el.id = v;
      });
    }
    var start = 1;
    if (attrs && typeof attrs === 'object' && !(attrs instanceof Node) && !Array.isArray(attrs)) {
      start = 2;
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) return;
        if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
        else if (k === 'value') el.value = v;
        else el.setAttribute(k, v === true ? '' : String(v));
      });
    }
    for (var i = start; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  function append(el, c) {
    if (c === undefined || c === null || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { append(el, x); }); return; }
    el.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  function svg(tag, attrs) {
    var el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  function show(node) {
    view.textContent = '';
    append(view, node);
  }

  /* ---- formatting -------------------------------------------------------------------- */

  function ago(iso) {
    if (!iso) return '—';
    var s = (Date.now() - Date.parse(iso)) / 1000;
    if (!isFinite(s)) return iso;
    if (s < 60) return 'just now';
    var units = [[60, 'min'], [3600, 'h'], [86400, 'd'], [86400 * 30, 'mo'], [86400 * 365, 'y']];
    var u = units[0];
    for (var i = 0; i < units.length; i++) if (s >= units[i][0]) u = units[i];
    return Math.floor(s / u[0]) + ' ' + u[1] + ' ago';
  }
  function when(iso) {
    return h('span', {title: iso || ''}, ago(iso));
  }
  function basename(p) {
    return p ? String(p).replace(/^.*[\/\\]/, '') : p;
  }
  function hex(n) {
    return '0x' + n.toString(16);
  }
  function statusTag(s) {
    return h('span.status-' + s, s);
  }

  /* ---- API ----------------------------------------------------------------------------- */

  function token() {
    try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }

  function ApiError(status, code, message) {
    this.status = status; this.code = code; this.message = message;
  }

  // api(path[, {method, body, text, token}]) -> Promise of JSON (or text with text: true).
  function api(path, opts) {
    opts = opts || {};
    var headers = {Authorization: 'Bearer ' + (opts.token || token())};
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    return fetch(path, {
      method: opts.method || 'GET', headers: headers, cache: 'no-store',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body)
    }).then(function (r) {
      if (r.ok) return opts.text ? r.text() : r.json();
      return r.json().catch(function () { return {}; }).then(function (j) {
        var e = j && j.error ? j.error : {};
        throw new ApiError(r.status, e.code || 'http_' + r.status, e.message || r.statusText);
      });
    }, function (e) {
      throw new ApiError(0, 'network', 'the server did not answer (' + e.message + ')');
    });
  }

  // What a failed load shows; a 401 asks for a token again.
  function failed(err) {
    if (err && err.status === 401 && !tokenAsked) {
      askToken('The server refused the token (' + err.message + '). Paste a token with the read scope.');
      return;
    }
    show(h('p.error', err && err.message ? (err.code || 'error') + ': ' + err.message : String(err)));
  }

  /* ---- token ------------------------------------------------------------------------- */

  var tokenAsked = false;
  function askToken(why) {
    tokenAsked = true;
    var input = h('input', {type: 'password', name: 'token', autocomplete: 'off',
                            placeholder: 'ss_…', 'aria-label': 'read token'});
    var form = h('form.token-box#token-form', {onsubmit: function (ev) {
      ev.preventDefault();
      var t = input.value.trim();
      if (!t) return;
      try { localStorage.setItem(TOKEN_KEY, t); } catch (e) { /* private mode: kept for this page */ }
      tokenAsked = false;
      route();
    }},
      h('h1', 'Read token'),
      h('p', why || 'Paste a stacksift API token with the read scope (deploy/quickstart.sh prints READ_TOKEN; '
        + '`stacksift token create --name dashboard --scopes read` makes one). It is kept in this browser.'),
      input,
      h('button.primary', {type: 'submit'}, 'Save'));
    show(form);
    input.focus();
  }
  document.getElementById('token-button').addEventListener('click', function () {
    askToken();
  });

  /* ---- routing ------------------------------------------------------------------------- */

  function parseHash() {
    var hsh = location.hash.replace(/^#\/?/, '');
    var q = hsh.indexOf('?');
    var path = q < 0 ? hsh : hsh.slice(0, q);
    var params = new URLSearchParams(q < 0 ? '' : hsh.slice(q + 1));
    return {parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: params};
  }

  function route() {
    renderSeq++;
    var r = parseHash();
    var section = r.parts[0] || 'issues';
    document.querySelectorAll('header nav a').forEach(function (a) {
      a.classList.toggle('active', a.getAttribute('data-nav') === section);
    });
    if (!token()) { askToken(); return; }
    tokenAsked = false;
    if (section === 'issues' && r.parts[1]) issuePage(r.parts[1]);
    else if (section === 'issues') issueList(r.params);
    else if (section === 'reports' && r.parts[1]) reportPage(r.parts[1]);
    else if (section === 'dsyms') missingPage();
    else if (section === 'privacy') privacyPage(r.params);
    else if (section === 'releases' && r.parts[1]) releasePage(r.parts[1]);
    else if (section === 'releases') releasesPage();
    else show(h('p.error', 'no such page: ' + location.hash));
  }
  window.addEventListener('hashchange', route);

  /* ---- issue list -------------------------------------------------------------------- */

  var FILTERS = ['project', 'app', 'version', 'kind', 'status', 'q', 'sort'];

  // The projects (GET /api/v1/projects), fetched once per page load: the selector's options.
  var projectsOnce = null;
  function projects() {
    if (!projectsOnce) projectsOnce = api('/api/v1/projects').then(function (r) { return r.projects; });
    return projectsOnce;
  }

  // A "Project" select: all projects, then each one by slug; `current` stays selected while the
  // list loads (and if it names no project the API answers 400, which the page shows).
  function projectSelect(current, onchange) {
    var sel = h('select', {name: 'project', onchange: function (ev) { onchange(ev.target.value); }},
      h('option', {value: ''}, 'all projects'),
      current ? h('option', {value: current, selected: true}, current) : null);
    projects().then(function (list) {
      while (sel.options.length > 1) sel.remove(1);
      list.forEach(function (p) {
        sel.appendChild(h('option', {value: p.slug, selected: p.slug === current, title: p.name},
          p.slug + (p.name && p.name !== p.slug ? ' — ' + p.name : '')));
      });
      if (current && !list.some(function (p) { return p.slug === current; }))
        sel.appendChild(h('option', {value: current, selected: true}, current));
    }, function () { /* no list: the select keeps "all" and the current value */ });
    return h('label', 'Project', sel);
  }

  function issueList(params) {
    var seq = renderSeq;
    var shownFor = location.hash;   // #list-info's data-loaded: which filters the rows answer
    var f = {};
    FILTERS.forEach(function (k) { f[k] = params.get(k) || ''; });
    if (!params.has('status')) f.status = 'open';
    if (!f.sort) f.sort = 'last_seen';

    function setFilter(k, v) {
      var p = new URLSearchParams();
      FILTERS.forEach(function (n) {
        var val = n === k ? v : f[n];
        if (n === 'status' || val) p.set(n, val);
      });
      location.hash = '#/issues?' + p.toString();
    }
    var timer = null;
    function textInput(k, label, cls, type) {
      return h('label', label, h('input' + (cls ? '.' + cls : ''), {
        type: type || 'text', name: k, value: f[k], autocomplete: 'off',
        oninput: function (ev) {
          clearTimeout(timer);
          var v = ev.target.value.trim();
          timer = setTimeout(function () { setFilter(k, v); }, 350);
        },
        onkeydown: function (ev) {
          if (ev.key === 'Enter') { clearTimeout(timer); setFilter(k, ev.target.value.trim()); }
        }
      }));
    }
    function selectInput(k, label, options) {
      return h('label', label, h('select', {name: k, onchange: function (ev) { setFilter(k, ev.target.value); }},
        options.map(function (o) {
          return h('option', {value: o[0], selected: f[k] === o[0]}, o[1]);
        })));
    }

    var filters = h('form.filters#filters', {onsubmit: function (ev) { ev.preventDefault(); }},
      projectSelect(f.project, function (v) { setFilter('project', v); }),
      textInput('q', 'Search title or culprit', null, 'search'),
      textInput('app', 'App', 'short'),
      textInput('version', 'Version', 'short'),
      selectInput('kind', 'Kind', [['', 'any'], ['crash', 'crash'], ['hang', 'hang'], ['sample', 'sample']]),
      selectInput('status', 'Status', [['open', 'open'], ['resolved', 'resolved'], ['ignored', 'ignored'], ['', 'any']]),
      selectInput('sort', 'Sort by', [['last_seen', 'last seen'], ['first_seen', 'first seen'], ['count', 'count']]));

    function th(label, key) {
      if (!key) return h('th', label);
      return h('th.sortable' + (f.sort === key ? '.sorted' : ''), {
        onclick: function () { setFilter('sort', key); }, title: 'sort by ' + label.toLowerCase()
      }, label);
    }
    var tbody = h('tbody');
    var table = h('table.list#issues', h('thead', h('tr',
      th('Issue'), th('Count', 'count'), th('Last 30 days'), th('First seen', 'first_seen'),
      th('Last seen', 'last_seen'), th('Versions'), th('Status'))), tbody);
    var info = h('p.muted#list-info', 'Loading…');
    var more = h('div.more');
    show([h('div.page-head', h('h1', 'Issues'),
            h('a#privacy-link', {href: '#/privacy'}, 'Privacy-API call sites →')),
          filters, info, table, more]);

    var shown = 0;
    function load(cursor) {
      var q = new URLSearchParams();
      FILTERS.forEach(function (k) { if (f[k]) q.set(k, f[k]); });
      q.set('limit', '50');
      if (cursor) q.set('cursor', cursor);
      return api('/api/v1/issues?' + q.toString()).then(function (page) {
        if (seq !== renderSeq) return;
        page.issues.forEach(function (it) { tbody.appendChild(issueRow(it)); });
        shown += page.issues.length;
        info.textContent = shown === 0 ? 'No issues match these filters.'
          : shown + (page.next_cursor ? '+' : '') + ' issue' + (shown === 1 ? '' : 's');
        info.setAttribute('data-loaded', shownFor);
        more.textContent = '';
        if (page.next_cursor) {
          more.appendChild(h('button#load-more', {onclick: function () { load(page.next_cursor); }}, 'Load more'));
        }
        sparklines(page.issues, seq);
      });
    }
    load(null).catch(failed);
  }

  function issueRow(it) {
    var versions = it.versions || [];
    var vshown = versions.slice(-3).reverse();
    return h('tr', {'data-issue': it.id},
      h('td',
        h('a.issue-title', {href: '#/issues/' + it.id}, it.title),
        h('div.culprit', it.culprit),
        h('div',
          it.app ? h('span.tag', it.app) : null,
          h('span.tag', it.kind),
          it.provisional ? h('span.tag.warn', {title: 'grouped by image + offset until its dSYM is uploaded'}, 'provisional') : null,
          it.regressed ? h('span.tag.bad', 'regressed') : null)),
      h('td.num', String(it.count)),
      h('td.spark', {'data-spark': it.id}, emptySpark()),
      h('td.when', when(it.first_seen)),
      h('td.when', when(it.last_seen)),
      h('td.versions', vshown.map(function (v) { return h('span.tag', v); }),
        versions.length > 3 ? h('span.muted', {title: versions.join(', ')}, '+' + (versions.length - 3)) : null),
      h('td', statusTag(it.status)));
  }

  function emptySpark() {
    return svg('svg', {class: 'spark', width: 120, height: 24, viewBox: '0 0 120 24'});
  }

  // "N reports in all, most (M) on DAY": what a chart of daily counts says, in words.
  function dailySummary(counts, days) {
    var total = 0, top = 0;
    counts.forEach(function (c, i) { total += c; if (c > counts[top]) top = i; });
    var s = total + (total === 1 ? ' report' : ' reports') + ' in the last ' + counts.length + ' days';
    if (total > 0) s += ', most (' + counts[top] + ') on ' + (days ? days[top] : 'day ' + (top + 1));
    return s;
  }

  // 30 daily bars; `counts` oldest first. The list's sparkline: its label says what it shows,
  // each bar's title its day and count.
  function spark(counts, days, w, hgt, cls) {
    w = w || 120; hgt = hgt || 24;
    var max = Math.max.apply(null, counts.concat([1]));
    var bw = w / counts.length;
    var el = svg('svg', {class: 'spark' + (cls ? ' ' + cls : ''), width: w, height: hgt, viewBox: '0 0 ' + w + ' ' + hgt,
                         role: 'img', 'aria-label': 'Reports per day: ' + dailySummary(counts, days)});
    counts.forEach(function (c, i) {
      var bh = c > 0 ? Math.max(1.5, (hgt - 1) * c / max) : 0.5;
      el.appendChild(svg('rect', {x: (i * bw + 0.5).toFixed(1), y: (hgt - bh).toFixed(1),
                                  width: Math.max(1, bw - 1).toFixed(1), height: bh.toFixed(1),
                                  opacity: c > 0 ? 1 : 0.25},
        svg('title', {}, (days ? days[i] + ': ' : '') + c)));
    });
    return el;
  }

  // A chart's text equivalent for screen readers: a visually hidden table of its data.
  function srTable(caption, headers, rows) {
    return h('table.sr-only', h('caption', caption),
      h('thead', h('tr', headers.map(function (x) { return h('th', {scope: 'col'}, x); }))),
      h('tbody', rows.map(function (r) {
        return h('tr', r.map(function (c, i) { return i ? h('td', c) : h('th', {scope: 'row'}, c); }));
      })));
  }

  // "2026-11-27" -> "Nov 27" (UTC days: the API's days are UTC dates).
  var MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  function shortDay(day) {
    var m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day || '');
    return m ? MONTHS[Number(m[2]) - 1] + ' ' + Number(m[3]) : String(day);
  }

  // The issue page's daily chart: bars of reports per UTC day with a count axis and date
  // labels under the bars, each bar's day and count on hover, and a table of the same
  // numbers for screen readers. `days` and `counts` oldest first.
  function dailyChart(days, counts) {
    var w = 640, hgt = 164, left = 36, right = 22, top = 24, bottom = 24;
    var pw = w - left - right, ph = hgt - top - bottom;
    var max = Math.max.apply(null, counts.concat([1]));
    var bw = pw / counts.length;
    var summary = 'Reports per UTC day, ' + days[0] + ' to ' + days[days.length - 1] + ': ' + dailySummary(counts, days);
    var el = svg('svg', {class: 'chart daily', width: w, height: hgt, viewBox: '0 0 ' + w + ' ' + hgt,
                         role: 'img', 'aria-label': summary});
    var yAxis = svg('g', {class: 'axis axis-y'});
    [0, max].forEach(function (v) {
      var y = top + ph * (1 - v / max);
      yAxis.appendChild(svg('line', {x1: left - 4, x2: w - right, y1: y.toFixed(1), y2: y.toFixed(1), class: v ? 'grid' : 'base'}));
      yAxis.appendChild(svg('text', {x: left - 6, y: (y + 4).toFixed(1), 'text-anchor': 'end'}, String(v)));
    });
    yAxis.appendChild(svg('text', {class: 'axis-title', x: 2, y: 11}, 'reports'));
    el.appendChild(yAxis);
    counts.forEach(function (c, i) {
      var bh = c > 0 ? Math.max(1.5, ph * c / max) : 0;
      el.appendChild(svg('rect', {x: (left + i * bw + 1).toFixed(1), y: (top + ph - bh).toFixed(1),
                                  width: Math.max(1, bw - 2).toFixed(1), height: bh.toFixed(1)},
        svg('title', {}, days[i] + ': ' + c + (c === 1 ? ' report' : ' reports'))));
      // a transparent column over the whole height, so that a day without reports has a hover too
      el.appendChild(svg('rect', {class: 'hit', x: (left + i * bw).toFixed(1), y: top, width: bw.toFixed(1), height: ph},
        svg('title', {}, days[i] + ': ' + c + (c === 1 ? ' report' : ' reports'))));
    });
    var xAxis = svg('g', {class: 'axis axis-x'});
    days.forEach(function (d, i) {
      if (i % 7 !== (days.length - 1) % 7) return;   // every 7th day, ending on the last one
      xAxis.appendChild(svg('text', {x: (left + (i + 0.5) * bw).toFixed(1), y: hgt - 6, 'text-anchor': 'middle',
                                     'data-day': d}, shortDay(d)));
    });
    el.appendChild(xAxis);
    return h('figure.chart#daily-chart', el,
      srTable(summary, ['Day (UTC)', 'Reports'], days.map(function (d, i) { return [d, String(counts[i])]; })));
  }

  // One request for the sparklines of a whole page of issues.
  function sparklines(issues, seq) {
    if (!issues.length) return;
    var ids = issues.map(function (it) { return it.id; });
    api('/api/v1/daily?issues=' + ids.join(',')).then(function (d) {
      if (seq !== renderSeq) return;
      ids.forEach(function (id) {
        var cell = view.querySelector('td[data-spark="' + id + '"]');
        var counts = d.issues[String(id)];
        if (cell && counts) { cell.textContent = ''; cell.appendChild(spark(counts, d.days)); }
      });
    }).catch(function () { /* the list stands without sparklines */ });
  }

  /* ---- issue page -------------------------------------------------------------------- */

  function issuePage(id) {
    var seq = renderSeq;
    show(h('p.muted', 'Loading issue ' + id + '…'));
    api('/api/v1/issues/' + encodeURIComponent(id)).then(function (it) {
      if (seq !== renderSeq) return;
      var sample = it.latest_sample || null;
      var reportsBody = h('tbody');
      var reportsMore = h('div.more');
      var daily = it.daily || [];
      show([
        h('p', h('a', {href: '#/issues'}, '← Issues')),
        h('h1#issue-title', it.title),
        h('div.culprit#issue-culprit', it.culprit),
        h('div', it.app ? h('span.tag', it.app) : null, h('span.tag', it.kind),
          it.provisional ? h('span.tag.warn', 'provisional: regrouped when the dSYM arrives') : null,
          it.regressed ? h('span.tag.bad', 'regressed ' + ago(it.regressed_at)) : null),
        statusControl(it),
        h('div.facts',
          fact('Reports', String(it.count)),
          fact('First seen', when(it.first_seen)),
          fact('Last seen', when(it.last_seen)),
          fact('Exception', it.exception || '—'),
          fact('Versions', (it.versions || []).join(', ') || '—'),
          fact('Releases', (function () { var el = h('span#issue-releases', '…'); issueReleases(it, el); return el; })()),
          fact('Grouped by', it.basis || '—'),
          it.hang_duration_ms ? fact('Hang duration', h('span#hang-duration',
            'median ' + it.hang_duration_ms.median + ' ms · p90 ' + it.hang_duration_ms.p90 +
            ' ms · max ' + it.hang_duration_ms.max + ' ms')) : null,
          fact('Fingerprint', h('span.mono', {title: it.fingerprint}, (it.fingerprint || '').slice(0, 16)))),
        h('h2', 'Last 30 days'),
        daily.length ? dailyChart(daily.map(function (d) { return d.day; }),
                                  daily.map(function (d) { return d.count; })) : h('p.muted', 'no data'),
        h('div.grid3',
          breakdown('App version', it.breakdowns && it.breakdowns.app_version),
          breakdown('OS version', it.breakdowns && it.breakdowns.os_version),
          breakdown('Device', it.breakdowns && it.breakdowns.hardware_model)),
        h('h2', 'Signature'),
        signatureTable(it.frames || []),
        h('h2', 'Sample stack',
          sample ? h('span.muted', ' — report ', h('a.mono#sample-report', {href: '#/reports/' + sample.id, title: sample.id}, shortId(sample.id)),
                     ', ' + [sample.app_version, sample.os_version, sample.hardware_model].filter(Boolean).join(' · ')) : null),
        sample && sample.report ? sampleStack(sample.report) : h('p.muted', 'No processed sample yet.'),
        sample && sample.report && sample.report.tree ? callGraph(sample.report) : null,
        h('h2', 'Reports'),
        h('table.list#issue-reports', h('thead', h('tr', h('th', 'Report'), h('th', 'Received'),
          h('th', 'Status'), h('th', 'Version'), h('th', 'OS'), h('th', 'Device'))), reportsBody),
        reportsMore
      ]);
      function loadReports(cursor) {
        var q = 'limit=20' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');
        api('/api/v1/issues/' + encodeURIComponent(id) + '/reports?' + q).then(function (page) {
          if (seq !== renderSeq) return;
          page.reports.forEach(function (r) {
            reportsBody.appendChild(h('tr',
              h('td', h('a.mono', {href: '#/reports/' + r.id}, r.id)),
              h('td.when', when(r.received_at)), h('td', r.status), h('td', r.app_version || '—'),
              h('td', r.os_version || '—'), h('td', r.hardware_model || '—')));
          });
          reportsMore.textContent = '';
          if (page.next_cursor) {
            reportsMore.appendChild(h('button', {onclick: function () { loadReports(page.next_cursor); }}, 'Load more'));
          }
        }).catch(function (e) { reportsMore.textContent = 'reports: ' + e.message; });
      }
      loadReports(null);
    }).catch(failed);
  }

  // A call tree report (sample, MetricKit): the main thread's call graph (thread 0, else the
  // first), each frame with its sample count, callees indented under their caller, the
  // heaviest callee first at every level (so the heaviest path is the top rows). Frames are
  // in pre-order with parent indexes; walked without recursion (trees can be deep), at most
  // MAX rows.
  function callGraph(rep) {
    var MAX = 400;
    var threads = rep.threads || [];
    var t = threads.filter(function (x) { return x.index === 0; })[0] || threads[0];
    if (!t || !(t.frames || []).length) return null;
    var frames = t.frames, images = rep.images || [];
    var kids = frames.map(function () { return []; }), roots = [];
    frames.forEach(function (f, i) {
      var p = f.parent;
      (p !== null && p !== undefined && p >= 0 && p < i ? kids[p] : roots).push(i);
    });
    var heavier = function (a, b) { return (frames[b].sample_count || 0) - (frames[a].sample_count || 0) || a - b; };
    var rows = [], stack = roots.slice().sort(heavier).reverse().map(function (i) { return [i, 0]; });
    while (stack.length && rows.length < MAX) {
      var top = stack.pop(), i = top[0], level = top[1], f = frames[i];
      var sym = (f.symbols || [])[0];
      var img = f.image_index !== null && f.image_index !== undefined ? images[f.image_index] : null;
      var addr = f.address ? parseInt(f.address, 16) : NaN;
      var load = img && img.load_address ? parseInt(img.load_address, 16) : NaN;
      var name = sym ? sym.function : f.symbol ? f.symbol
        : isFinite(addr) && isFinite(load) ? (f.image || '?') + ' + ' + hex(addr - load) : (f.address || '???');
      var fn = h('td.fn', {title: f.address || ''}, name,
        h('span.muted', ' (in ' + (f.image || '???') + ')'),
        sym && sym.file ? h('span.muted', ' ' + basename(sym.file) + (sym.line ? ':' + sym.line : '')) : null);
      fn.style.paddingLeft = (8 + 14 * level) + 'px';   // CSSOM: the CSP forbids style attributes
      rows.push(h('tr' + (inAppImage(img) ? '.in-app' : ''), {'data-depth': String(level)},
        h('td.idx', String(f.sample_count || 0)), fn));
      kids[i].slice().sort(heavier).reverse().forEach(function (k) { stack.push([k, level + 1]); });
    }
    return h('div#call-graph',
      h('h2', 'Main thread call graph',
        h('span.muted', ' — thread ' + t.index + (t.name ? ' ' + t.name : '') +
          (t.sample_count ? ', ' + t.sample_count + ' samples' : '') +
          (frames.length > rows.length ? ', first ' + rows.length + ' of ' + frames.length + ' frames' : ''))),
      h('table.stack.callgraph', h('tbody', rows)));
  }

  function fact(label, value) {
    return h('div', h('span.label', label), value);
  }

  function breakdown(title, rows) {
    rows = rows || [];
    var total = rows.reduce(function (s, r) { return s + r.count; }, 0) || 1;
    return h('div.panel.bars', {'data-breakdown': title},
      h('strong', title),
      rows.length ? rows.slice(0, 10).map(function (r) {
        var pct = Math.round(100 * r.count / total);
        var bar = h('div.bar');
        bar.style.width = Math.max(pct, 1) + '%';   // CSSOM: the page's CSP forbids style attributes
        return h('div.row',
          h('div', h('div', r.value === null || r.value === '' ? '(unknown)' : r.value), bar),
          h('div.num', {title: pct + '%'}, String(r.count)));
      }) : h('div.muted', 'no data'),
      rows.length > 10 ? h('div.muted', (rows.length - 10) + ' more') : null);
  }

  function signatureTable(frames) {
    if (!frames.length) return h('p.muted', 'No frames: grouped by exception only.');
    return h('table.stack#signature', h('tbody', frames.map(function (f, i) {
      return h('tr' + (f.in_app ? '.in-app' : ''),
        h('td.idx', String(i)),
        h('td.img', f.image || ''),
        h('td.fn', f.function || f.raw || ''),
        h('td.loc', f.file ? h('span', {title: f.file}, basename(f.file) + (f.line ? ':' + f.line : '')) : ''));
    })));
  }

  // in-app as the server decided it (images[].in_app, set by the signature rules when the
  // report was processed); a report not processed yet has no decision: nothing highlighted.
  function inAppImage(img) {
    return !!(img && img.in_app === true);
  }

  // A report id in a few characters that still tell reports apart. Ids are UUIDv7: the first
  // 12 hex digits are the time in ms (reports of the same minute share the first 8), the last
  // 12 are random: those are shown, the whole id is the link and its title.
  function shortId(id) {
    var hexOnly = String(id || '').replace(/-/g, '');
    return hexOnly.length > 8 ? '…' + hexOnly.slice(-8) : hexOnly;
  }

  // What a hang report shows: the main thread's stack as it was during the hang (the thread
  // the report marks, else thread 0, the main thread by Apple's numbering) and how long the
  // app hung, when the report says.
  function hangStack(rep) {
    var threads = rep.threads || [];
    var t = threads.filter(function (x) { return x.crashed; })[0] ||
            threads.filter(function (x) { return x.index === 0; })[0] || threads[0];
    if (!t) return null;
    var ms = (rep.metadata || {}).hang_duration_ms;
    return {label: 'Main thread during the hang' + (t.index !== 0 ? ' (thread ' + t.index + ')' : '') +
            (t.name ? ' — ' + t.name : '') + (t.queue ? ' (' + t.queue + ')' : ''),
            detail: ms ? 'the app did not respond for ' + ms + ' ms' : 'hang duration not reported',
            frames: t.frames || []};
  }

  // The crashing stack: the Last Exception Backtrace, else the crashed thread, else thread 0.
  // A hang has no crash: its main thread's stack (hangStack).
  function crashingStack(rep) {
    if (rep.kind === 'hang') return hangStack(rep);
    var threads = rep.threads || [];
    if (rep.last_exception_backtrace && rep.last_exception_backtrace.length) {
      return {label: 'Last Exception Backtrace', frames: rep.last_exception_backtrace};
    }
    var meta = rep.metadata || {};
    var t = threads.filter(function (x) { return x.crashed; })[0] ||
            threads.filter(function (x) { return x.index === meta.crashed_thread; })[0] || threads[0];
    if (!t) return null;
    return {label: 'Thread ' + t.index + (t.crashed ? ' crashed' : '') + (t.name ? ' — ' + t.name : '')
            + (t.queue ? ' (' + t.queue + ')' : ''), frames: t.frames || []};
  }

  // How a minidump's stack walk found the frame (report JSON "found"); scanned frames are
  // the least sure and stay out of the signature.
  function foundTag(fr) {
    if (!fr.found || fr.found === 'context') return null;
    return h('span.tag' + (fr.found === 'scan' ? '.muted' : ''),
             {title: 'found by the stack walk: ' + fr.found.replace('_', ' ')}, fr.found.replace('_', ' '));
  }

  function stackTable(rep, frames) {
    var images = rep.images || [];
    var meta = rep.metadata || {};
    var rows = [];
    frames.forEach(function (fr) {
      var img = fr.image_index !== null && fr.image_index !== undefined ? images[fr.image_index] : null;
      var inApp = inAppImage(img);
      var syms = fr.symbols || [];
      var loc = function (file, line) {
        return file ? h('span', {title: file}, basename(file) + (line ? ':' + line : '')) : '';
      };
      if (!syms.length) {
        var addr = fr.address ? parseInt(fr.address, 16) : NaN;
        var load = img && img.load_address ? parseInt(img.load_address, 16) : NaN;
        var what = fr.symbol ? fr.symbol + (fr.symbol_offset ? ' + ' + fr.symbol_offset : '')
          : (isFinite(addr) && isFinite(load) ? (fr.image || '?') + ' + ' + hex(addr - load) : fr.address || '???');
        rows.push(h('tr' + (inApp ? '.in-app' : ''), {title: fr.address || ''},
          h('td.idx', String(fr.index)), h('td.img', fr.image || '???'),
          h('td.fn' + (fr.symbol ? '' : '.muted'), {title: fr.mangled}, what, foundTag(fr)), h('td.loc', loc(fr.file, fr.line))));
        return;
      }
      syms.forEach(function (s, k) {
        rows.push(h('tr' + (inApp ? '.in-app' : '') + (s.inlined ? '.inlined' : ''), {title: fr.address || ''},
          h('td.idx', k === 0 ? String(fr.index) : ''),
          h('td.img', k === 0 ? (fr.image || '') : ''),
          h('td.fn', {title: s.mangled}, s.function, s.inlined ? h('span.tag', {title: 'inlined into the frame below'}, 'inlined') : null,
            k === syms.length - 1 ? foundTag(fr) : null),
          h('td.loc', loc(s.file, s.line))));
      });
    });
    return h('table.stack', h('tbody', rows));
  }

  function sampleStack(rep) {
    var main = crashingStack(rep);
    if (!main) return h('p.muted', 'The sample has no stack.');
    var others = h('div');
    var shownAll = false;
    var toggle = h('button', {type: 'button', onclick: function () {
      shownAll = !shownAll;
      others.textContent = '';
      toggle.textContent = shownAll ? 'Hide other threads' : 'Show all threads';
      if (!shownAll) return;
      (rep.threads || []).forEach(function (t) {
        if (t.frames === main.frames) return;
        append(others, [h('h2', 'Thread ' + t.index + (t.name ? ' — ' + t.name : '') + (t.queue ? ' (' + t.queue + ')' : '')),
                        stackTable(rep, t.frames || [])]);
      });
    }}, 'Show all threads');
    var meta = rep.metadata || {};
    var exc = [meta.exception_type, meta.signal && '(' + meta.signal + ')'].filter(Boolean).join(' ');
    return h('div#sample',
      h('p', h('strong#stack-label', main.label),
        main.detail ? h('span.muted#hang-detail', ' — ' + main.detail) : null,
        exc && !main.detail ? h('span.muted', ' — ' + exc) : null,
        meta.exception_reason ? h('div.mono', meta.exception_reason) : null,
        meta.termination_reason ? h('div.mono.muted', meta.termination_reason) : null),
      stackTable(rep, main.frames),
      h('p', toggle), others);
  }

  function statusControl(it) {
    var sel = h('select#status-select', {'aria-label': 'status'},
      ['open', 'resolved', 'ignored'].map(function (s) { return h('option', {value: s, selected: it.status === s}, s); }));
    var inVersion = h('input#resolved-in', {type: 'text', placeholder: 'resolved in version (optional)',
                                            value: it.resolved_in || '', disabled: it.status !== 'resolved'});
    var msg = h('span.muted#status-msg');
    sel.addEventListener('change', function () { inVersion.disabled = sel.value !== 'resolved'; });
    var admin = h('input#admin-token', {type: 'password', placeholder: 'admin token', hidden: true, autocomplete: 'off'});
    function save() {
      var body = {status: sel.value};
      if (sel.value === 'resolved' && inVersion.value.trim()) body.resolved_in = inVersion.value.trim();
      var t = admin.value.trim() || sessionStorage.getItem(ADMIN_KEY) || token();
      msg.textContent = 'saving…';
      api('/api/v1/issues/' + it.id, {method: 'PATCH', body: body, token: t}).then(function (r) {
        if (admin.value.trim()) sessionStorage.setItem(ADMIN_KEY, admin.value.trim());
        admin.hidden = true;
        msg.textContent = 'status: ' + r.status + (r.resolved_in ? ' in ' + r.resolved_in : '');
      }, function (e) {
        if (e.status === 403 || e.status === 401) {
          sessionStorage.removeItem(ADMIN_KEY);
          admin.hidden = false;
          admin.focus();
          msg.textContent = 'changing the status needs a token with the admin scope';
        } else {
          msg.textContent = e.message;
        }
      });
    }
    return h('form.status-control', {onsubmit: function (ev) { ev.preventDefault(); save(); }},
             h('strong', 'Status'), sel, inVersion, admin,
             h('button.primary#status-save', {type: 'submit'}, 'Save'), msg);
  }

  /* ---- report page ------------------------------------------------------------------- */

  // A minidump's stack walk: how its frames were found, and the images its frames fell in
  // that lacked unwind info (no executable uploaded) or debug info (no dSYM).
  function walkFacts(model) {
    if (!model) return null;
    var counts = {}, used = {};
    (model.threads || []).forEach(function (t) {
      (t.frames || []).forEach(function (f) {
        if (f.found) counts[f.found] = (counts[f.found] || 0) + 1;
        if (f.image_index !== null && f.image_index !== undefined) used[f.image_index] = f;
      });
    });
    var noUnwind = [], noDebug = [];
    Object.keys(used).forEach(function (i) {
      var im = (model.images || [])[i];
      if (!im) return;
      if (im.unwind === false) noUnwind.push(im.name || im.uuid || '?');
      if (used[i].symbolicated === 'missing') noDebug.push(im.name || im.uuid || '?');
    });
    var how = ['context', 'cfi', 'frame_pointer', 'scan'].filter(function (k) { return counts[k]; })
      .map(function (k) { return counts[k] + ' by ' + k.replace('_', ' '); }).join(', ');
    return [fact('Frames found', how || '—'),
            noUnwind.length ? fact('No unwind info', h('span.mono#no-unwind', noUnwind.join(' '))) : null,
            noDebug.length ? fact('No debug info', h('span.mono#no-debug', noDebug.join(' '))) : null];
  }

  function reportPage(id) {
    var seq = renderSeq;
    var enc = encodeURIComponent(id);
    show(h('p.muted', 'Loading report…'));
    api('/api/v1/reports/' + enc).then(function (rep) {
      if (seq !== renderSeq) return;
      var raw = h('pre#raw-text', 'Loading…');
      var sym = h('pre#symbolicated-text', 'Loading…');
      show([
        h('p', rep.issue_id ? h('a', {href: '#/issues/' + rep.issue_id}, '← Issue ' + rep.issue_id) : h('a', {href: '#/issues'}, '← Issues')),
        h('h1', 'Report ', h('span.mono', rep.id)),
        h('div.facts',
          fact('Status', rep.status), fact('Format', rep.format),
          fact('App', [rep.app, rep.app_version].filter(Boolean).join(' ') || '—'),
          fact('OS', rep.os_version || '—'), fact('Device', rep.hardware_model || '—'),
          fact('Received', when(rep.received_at)), fact('Kind', rep.kind || '—'),
          rep.error ? fact('Error', h('span.error', rep.error)) : null,
          rep.missing_uuids && rep.missing_uuids.length
            ? fact('Missing dSYMs', h('span.mono', rep.missing_uuids.join(' '))) : null,
          rep.unwind_uuids && rep.unwind_uuids.length
            ? fact('Missing unwind info', h('span.mono#missing-unwind', rep.unwind_uuids.join(' '))) : null,
          rep.format === 'minidump' ? walkFacts(rep.symbolicated || rep.report) : null),
        h('div.side',
          h('div', h('h2', 'Raw'), raw),
          h('div', h('h2', 'Symbolicated'), sym))
      ]);
      if (rep.format === 'minidump' || rep.format === 'plcrash') {
        // binary: a download, not text
        raw.textContent = '';
        append(raw, ['Binary ' + rep.format + ' (' + rep.raw_bytes + ' bytes): ',
          h('a', {href: '/api/v1/reports/' + enc + '/raw'}, 'download')]);
      } else {
        api('/api/v1/reports/' + enc + '/raw', {text: true}).then(function (t) { raw.textContent = t; },
          function (e) { raw.textContent = e.message; });
      }
      api('/api/v1/reports/' + enc + '?format=text', {text: true}).then(function (t) { sym.textContent = t; },
        function (e) { sym.textContent = e.message; });
    }).catch(failed);
  }

  /* ---- privacy-API call sites -------------------------------------------------------- */

  // Builds compare like app versions: part by part, numerically ("103" > "99").
  function buildCmp(a, b) {
    var x = String(a).split('.'), y = String(b).split('.');
    for (var i = 0; i < Math.max(x.length, y.length); i++) {
      var d = (parseInt(x[i], 10) || 0) - (parseInt(y[i], 10) || 0);
      if (d) return d;
    }
    return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0;
  }

  function callsiteStack(c) {
    return h('table.stack.callsite-stack', h('tbody', (c.stack || []).map(function (f, i) {
      var loc = f.file ? basename(f.file) + (f.line ? ':' + f.line : '') : '';
      return h('tr' + (f.in_app ? '.in-app' : '') + (f.inlined ? '.inlined' : ''),
        h('td.idx', String(i)), h('td.img', f.image || '—'),
        h('td.fn', f.function || ('+' + hex(f.offset)) + (f.inlined ? ' [inlined]' : '')),
        h('td.loc', loc));
    })));
  }

  function privacyPage(params) {
    var seq = renderSeq;
    var shownFor = location.hash;
    var f = {project: params.get('project') || '', tag: params.get('tag') || '',
             build: params.get('build') || '', q: params.get('q') || '', 'new': params.get('new') === '1'};
    function go(k, v) {
      f[k] = v;
      var p = new URLSearchParams();
      ['project', 'tag', 'build', 'q'].forEach(function (n) { if (f[n]) p.set(n, f[n]); });
      if (f['new'] && f.build) p.set('new', '1');
      location.hash = '#/privacy' + (p.toString() ? '?' + p.toString() : '');
    }
    show(h('p.muted', 'Loading call sites…'));
    // all call sites once (which APIs and builds exist), then the rows the filters ask for
    var scope = f.project ? '&project=' + encodeURIComponent(f.project) : '';
    api('/api/v1/callsites?limit=1000' + scope).then(function (all) {
      if (seq !== renderSeq) return null;
      var tags = {}, builds = {};
      all.callsites.forEach(function (c) {
        tags[c.tag] = true;
        c.builds.forEach(function (b) { builds[b] = true; });
      });
      var buildList = Object.keys(builds).sort(buildCmp);
      var latest = buildList[buildList.length - 1] || '';
      var q = new URLSearchParams({limit: '1000'});
      if (f.project) q.set('project', f.project);
      if (f.tag) q.set('tag', f.tag);
      if (f.q) q.set('q', f.q);
      if (f.build) q.set(f['new'] ? 'new_in_build' : 'build', f.build);
      return api('/api/v1/callsites?' + q.toString()).then(function (page) {
        if (seq !== renderSeq) return;
        var focus = f.build || latest;   // the build whose new call sites are highlighted
        function select(k, label, options) {
          return h('label', label, h('select', {name: k, onchange: function (ev) { go(k, ev.target.value); }},
            options.map(function (o) { return h('option', {value: o[0], selected: f[k] === o[0]}, o[1]); })));
        }
        var search = h('input', {type: 'search', name: 'q', value: f.q, placeholder: 'function or API',
                                 onkeydown: function (ev) { if (ev.key === 'Enter') go('q', ev.target.value.trim()); }});
        var filters = h('form.filters#privacy-filters', {onsubmit: function (ev) { ev.preventDefault(); }},
          projectSelect(f.project, function (v) { go('project', v); }),
          select('tag', 'API', [['', 'all']].concat(Object.keys(tags).sort().map(function (t) { return [t, t]; }))),
          select('build', 'Build', [['', 'all']].concat(buildList.slice().reverse().map(function (b) { return [b, b]; }))),
          h('label', 'Only new', h('input#only-new', {type: 'checkbox', checked: f['new'], disabled: !f.build,
            onchange: function (ev) { go('new', ev.target.checked); }})),
          h('label', 'Search', search));
        var groups = {};
        page.callsites.forEach(function (c) { (groups[c.tag] = groups[c.tag] || []).push(c); });
        var sections = Object.keys(groups).sort().map(function (tag) {
          var rows = groups[tag];
          var calls = rows.reduce(function (s, c) { return s + c.count; }, 0);
          var tbody = h('tbody');
          rows.forEach(function (c) {
            var isNew = c.first_seen_build === focus;
            var detail = h('tr.stack-row', {hidden: true}, h('td', {colspan: '6'}, callsiteStack(c)));
            var row = h('tr.callsite' + (isNew ? '.new' : ''), {'data-callsite': c.id, title: 'show the stack',
                onclick: function () { detail.hidden = !detail.hidden; }},
              h('td', c.frames.length ? c.frames.map(function (fr, i) {
                var loc = fr.file ? ' (' + basename(fr.file) + (fr.line ? ':' + fr.line : '') + ')' : '';
                return h('div.mono' + (i ? '.muted' : ''), fr.function + loc);
              }) : h('span.muted', 'no in-app frame'),
              isNew ? h('span.tag.new-tag', 'new in ' + focus) : null),
              h('td.num', String(c.count)), h('td.num', String(c.devices)),
              h('td.versions', c.builds.map(function (b) { return h('span.tag', b); })),
              h('td', c.first_seen_build), h('td.when', when(c.last_seen)));
            tbody.appendChild(row);
            tbody.appendChild(detail);
          });
          return h('section.api', {'data-tag': tag},
            h('h2', tag, h('span.muted', ' — ' + calls + ' call' + (calls === 1 ? '' : 's') + ', ' +
                           rows.length + ' call site' + (rows.length === 1 ? '' : 's'))),
            h('table.list.callsites', h('thead', h('tr', h('th', 'Call site (top in-app frames)'),
              h('th', 'Calls'), h('th', 'Devices'), h('th', 'Builds'), h('th', 'First build'), h('th', 'Last seen'))),
              tbody));
        });
        var pend = page.pending || {stacks: 0, calls: 0};
        var info = h('p.muted#privacy-info', {'data-loaded': shownFor},
          page.callsites.length + ' call site' + (page.callsites.length === 1 ? '' : 's') +
          (f.build ? (f['new'] ? ' new in build ' : ' in build ') + f.build : '') +
          (focus && !f['new'] ? '; highlighted: first seen in build ' + focus : '') +
          (pend.calls ? '; ' + pend.calls + ' calls wait for a dSYM' : ''));
        show([h('div.page-head', h('h1', 'Privacy APIs'), h('a', {href: '#/issues'}, '← Issues'),
                h('button#csv-download', {type: 'button', onclick: function () {
                  // the same rows as CSV, fetched with the token and saved from a blob
                  api('/api/v1/callsites.csv?' + q.toString().replace(/(^|&)limit=\d+/, ''), {text: true}).then(function (t) {
                    var a = h('a', {href: URL.createObjectURL(new Blob([t], {type: 'text/csv'})), download: 'callsites.csv'});
                    document.body.appendChild(a);
                    a.click();
                    a.remove();
                  }, failed);
                }}, 'Download CSV')),
              h('p.muted', 'Calls into privacy-sensitive APIs recorded by test devices, per API and call site '
                + '(the top in-app frames below the API), with the builds and devices that made them. '
                + 'Click a row for its symbolicated stack.'),
              filters, info,
              sections.length ? sections : h('p', 'No call site matches these filters.')]);
      });
    }).catch(failed);
  }

  /* ---- missing dSYMs ----------------------------------------------------------------- */

  function missingPage() {
    var seq = renderSeq;
    show(h('p.muted', 'Loading…'));
    api('/api/v1/dsyms/missing?limit=1000').then(function (d) {
      if (seq !== renderSeq) return;
      var rows = d.missing || [];
      show([
        h('h1', 'Missing dSYMs'),
        h('p.muted', 'Reports wait for these images’ debug files; uploading one processes and regroups them. '
          + 'Debug info (names) comes from a dSYM; unwind info, which the stack walk of a minidump needs, '
          + 'from the executable or dylib itself or a Breakpad .sym (uploading it walks those dumps again). '
          + 'From CI: curl -H "Authorization: Bearer $UPLOAD_TOKEN" -F file=@App.dSYM.zip ' + location.origin + '/api/v1/dsyms'),
        rows.length ? h('table.list#missing', h('thead', h('tr', h('th', 'UUID'), h('th', 'Image'),
          h('th', 'Needs'), h('th', 'Reports'), h('th', 'First received'), h('th', 'Last received'))),
          h('tbody', rows.map(function (m) {
            var needs = (m.needs || []).map(function (k) { return k.replace('_', ' '); }).join(', ');
            return h('tr', h('td.mono', m.uuid), h('td', m.name || '—'), h('td.needs', needs || '—'),
                     h('td.num', String(m.reports)),
                     h('td.when', when(m.first_received)), h('td.when', when(m.last_received)));
          }))) : h('p', 'No report is waiting for a debug file.')
      ]);
    }).catch(failed);
  }

  /* ---- releases (release health) ------------------------------------------------------- */

  // "com.example.app@1.4+103" -> "1.4": the app version reports carry (server: store_releases.c)
  function releaseVersion(rel) {
    return String(rel).replace(/^[^@]*@/, '').replace(/\+.*$/, '');
  }

  // "com.example.app@1.4+103" -> "1.4 (103)": a release as an axis label.
  function releaseLabel(rel) {
    var m = /^(?:[^@]*@)?([^+]*)(?:\+(.*))?$/.exec(String(rel));
    var s = m ? m[1] + (m[2] ? ' (' + m[2] + ')' : '') : String(rel);
    return s.length > 16 ? s.slice(0, 15) + '…' : s;
  }

  function pct(x) {
    if (x === null || x === undefined) return '—';
    var v = 100 * x;
    return (v === 100 ? '100' : v >= 99.995 ? '99.99' : v.toFixed(2)) + '%';
  }

  // A chart of rates in [0, 1] (null = no data) over `labels` (releases or UTC days, oldest
  // first): a line per series on a percent axis from the lowest value (rounded down to 1%) to
  // 100%, the labels under the x axis, each point's label, series and value on hover, and a
  // table of the same numbers for screen readers. `what` names the x axis ("Release",
  // "Day (UTC)"); `short` shortens a label for the axis.
  function trend(series, labels, what, short) {
    var w = 640, hgt = 204, left = 52, right = 12, top = 26, bottom = 44;
    var pw = w - left - right, ph = hgt - top - bottom;
    var title = 'Crash-free ' + series.map(function (s) { return s.name; }).join(' and ') + ' by ' + what.charAt(0).toLowerCase() + what.slice(1);
    var el = svg('svg', {class: 'chart trend', width: w, height: hgt, viewBox: '0 0 ' + w + ' ' + hgt,
                         role: 'img', 'aria-label': title});
    var vals = [];
    series.forEach(function (s) { s.values.forEach(function (v) { if (v !== null) vals.push(v); }); });
    var lo = vals.length ? Math.min(Math.floor(Math.min.apply(null, vals) * 100) / 100, 0.99) : 0.99;
    var n = labels.length;
    function x(i) { return left + (n > 1 ? 8 + i * (pw - 16) / (n - 1) : pw / 2); }
    function y(v) { return top + ph * (1 - (v - lo) / (1 - lo)); }
    var yAxis = svg('g', {class: 'axis axis-y'});
    [lo, (lo + 1) / 2, 1].forEach(function (v, k) {
      yAxis.appendChild(svg('line', {x1: left - 4, x2: w - right, y1: y(v).toFixed(1), y2: y(v).toFixed(1), class: k ? 'grid' : 'base'}));
      yAxis.appendChild(svg('text', {x: left - 6, y: (y(v) + 4).toFixed(1), 'text-anchor': 'end'},
                            (Math.round(v * 1000) / 10) + '%'));
    });
    yAxis.appendChild(svg('text', {class: 'axis-title', x: 2, y: 11}, 'crash-free'));
    el.appendChild(yAxis);
    var xAxis = svg('g', {class: 'axis axis-x'});
    var step = Math.max(1, Math.ceil(n / 8));   // at most ~8 labels
    labels.forEach(function (l, i) {
      if ((n - 1 - i) % step !== 0) return;      // always the newest
      xAxis.appendChild(svg('text', {x: x(i).toFixed(1), y: top + ph + 16, 'text-anchor': 'middle', 'data-label': l},
                            short ? short(l) : l));
    });
    xAxis.appendChild(svg('text', {class: 'axis-title', x: left + pw / 2, y: hgt - 4, 'text-anchor': 'middle'}, what));
    el.appendChild(xAxis);
    series.forEach(function (s) {
      var pts = [];
      s.values.forEach(function (v, i) { if (v !== null) pts.push(x(i).toFixed(1) + ',' + y(v).toFixed(1)); });
      el.appendChild(svg('polyline', {points: pts.join(' '), class: s.cls, fill: 'none'}));
      s.values.forEach(function (v, i) {
        if (v === null) return;
        el.appendChild(svg('circle', {cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 4, class: s.cls},
          svg('title', {}, labels[i] + ': crash-free ' + s.name + ' ' + pct(v))));
      });
    });
    return h('figure.chart', el,
      srTable(title, [what].concat(series.map(function (s) { return 'Crash-free ' + s.name; })),
              labels.map(function (l, i) { return [l].concat(series.map(function (s) { return pct(s.values[i]); })); })));
  }

  function releasesPage() {
    var seq = renderSeq;
    show(h('p.muted', 'Loading releases…'));
    api('/api/v1/releases?limit=200').then(function (d) {
      if (seq !== renderSeq) return;
      var rows = d.releases || [];
      var old = rows.slice().reverse();   // oldest first for the trend
      show([
        h('h1', 'Releases'),
        h('p.muted', 'Crash-free sessions and users per release, from the sessions clients send ' +
          '(a crash report without sessions counts on its issue, not in these rates).'),
        rows.length ? h('div#release-trend',
          trend([{name: 'sessions', cls: 'cf-sessions', values: old.map(function (r) { return r.crash_free_sessions; })},
                 {name: 'users', cls: 'cf-users', values: old.map(function (r) { return r.crash_free_users; })}],
                old.map(function (r) { return r.release; }), 'Release', releaseLabel),
          h('div.legend', h('span.cf-sessions', 'crash-free sessions'), ' ', h('span.cf-users', 'crash-free users'))) : null,
        rows.length ? h('table.list#releases', h('thead', h('tr', h('th', 'Release'), h('th', 'Sessions'),
          h('th', 'Crash-free sessions'), h('th', 'Crash-free users'), h('th', 'Users'),
          h('th', 'Adoption (24 h)'), h('th', 'New issues'), h('th', 'Last seen'))),
          h('tbody', rows.map(function (r) {
            return h('tr', {'data-release': r.release},
              h('td', h('a', {href: '#/releases/' + encodeURIComponent(r.release)}, r.release)),
              h('td.num', String(r.sessions)),
              h('td.num.cfs', {title: (r.sessions - r.crashed) + ' / ' + r.sessions}, pct(r.crash_free_sessions)),
              h('td.num.cfu', {title: (r.users - r.crashed_users) + ' / ' + r.users}, pct(r.crash_free_users)),
              h('td.num', String(r.users)),
              h('td.num.adoption', pct(r.adoption)),
              h('td.num', r.new_issues ? h('a', {href: '#/issues?version=' + encodeURIComponent(releaseVersion(r.release))},
                String(r.new_issues)) : '0'),
              h('td.when', when(r.last_seen)));
          }))) : h('p', 'No sessions yet: clients POST them to /api/v1/sessions (or send Sentry session envelopes).'),
        failedAlerts
      ]);
    }).catch(failed);
    // Alert events given up on: GET /api/v1/alerts needs an admin token, so only on request.
    var failedAlerts = h('div#failed-alerts', h('button#show-failed-alerts', {onclick: function () {
      api('/api/v1/alerts').then(function (d) {
        var rows = d.failed || [];
        failedAlerts.textContent = '';
        failedAlerts.appendChild(h('h2', 'Alert deliveries that failed'));
        failedAlerts.appendChild(rows.length ? h('table.list#failed-alert-events', h('thead', h('tr',
          h('th', 'Event'), h('th', 'Rule'), h('th', 'Kind'), h('th', 'Cause'), h('th', 'Tries'),
          h('th', 'Last error'), h('th', 'Made'))),
          h('tbody', rows.map(function (e) {
            return h('tr', h('td.mono', e.id.slice(0, 8)), h('td.num', String(e.rule)), h('td', e.kind),
              h('td.mono', e.cause), h('td.num', String(e.attempts)), h('td', e.last_error || '—'),
              h('td.when', when(e.created_at)));
          }))) : h('p.muted', 'None: every alert event was delivered or is still being retried.'));
      }).catch(function (e) {
        failedAlerts.appendChild(h('p.error', 'alerts: ' + e.message + ' (an admin token is needed)'));
      });
    }}, 'Failed alert deliveries'));
  }

  function releasePage(name) {
    var seq = renderSeq;
    show(h('p.muted', 'Loading release ' + name + '…'));
    api('/api/v1/releases/' + encodeURIComponent(name)).then(function (r) {
      if (seq !== renderSeq) return;
      var days = r.daily || [];
      show([
        h('p', h('a', {href: '#/releases'}, '← Releases')),
        h('h1#release-title', r.release),
        h('div.facts',
          fact('Sessions', String(r.sessions)),
          fact('Crash-free sessions', h('span#release-cfs', pct(r.crash_free_sessions))),
          fact('Crash-free users', h('span#release-cfu', pct(r.crash_free_users))),
          fact('Crashed / abnormal / errored', r.crashed + ' / ' + r.abnormal + ' / ' + r.errored),
          fact('Users', r.users + ' (' + r.crashed_users + ' crashed)'),
          fact('Adoption (24 h)', pct(r.adoption)),
          fact('New issues', String(r.new_issues)),
          fact('First seen', when(r.first_seen)),
          fact('Last seen', when(r.last_seen))),
        h('h2', 'Crash-free sessions per day'),
        days.length ? h('div#release-daily', trend([{name: 'sessions', cls: 'cf-sessions', values: days.map(function (x) { return x.crash_free_sessions; })}],
                            days.map(function (x) { return x.day; }), 'Day (UTC)', shortDay)) : h('p.muted', 'no data'),
        h('h2', 'Top issues in ' + (r.version || r.release)),
        (r.issues || []).length ? h('table.list#release-issues', h('thead', h('tr', h('th', 'Issue'),
          h('th', 'Reports in this version'), h('th', 'All reports'), h('th', 'Status'))),
          h('tbody', r.issues.map(function (it) {
            return h('tr', h('td', h('a', {href: '#/issues/' + it.id}, it.title), h('div.muted', it.culprit)),
              h('td.num', String(it.reports)), h('td.num', String(it.count)), h('td', statusTag(it.status)));
          }))) : h('p.muted', 'No issue lists this version.')
      ]);
    }).catch(failed);
  }

  // On an issue page: the releases whose version the issue was seen in.
  function issueReleases(it, el) {
    var versions = it.versions || [];
    api('/api/v1/releases?limit=1000').then(function (d) {
      var rel = (d.releases || []).filter(function (r) { return versions.indexOf(releaseVersion(r.release)) >= 0; });
      el.textContent = '';
      if (!rel.length) { el.appendChild(h('span.muted', 'no sessions for its versions')); return; }
      rel.forEach(function (r) {
        el.appendChild(h('a.tag', {href: '#/releases/' + encodeURIComponent(r.release),
                                   title: 'crash-free sessions ' + pct(r.crash_free_sessions)}, r.release));
      });
    }).catch(function () { el.textContent = '—'; });
  }

  route();
})();
