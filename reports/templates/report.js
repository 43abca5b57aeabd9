/* opconform report: matrices over the page data (JSON in #report-data).
   Every string from the results reaches the DOM through textContent or a DOM property,
   never through innerHTML. Rows are rendered lazily (only those in view). */
(function () {
  "use strict";
  var T0 = performance.now();
  var D = JSON.parse(document.getElementById("report-data").textContent);
  function inflate(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var k = 0; k < bin.length; k++) bytes[k] = bin.charCodeAt(k);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }
  if (typeof DecompressionStream === "undefined") {
    document.getElementById("count").textContent = "this browser cannot unpack the report data (no DecompressionStream)";
    return;
  }
  inflate(D.strings_gz).then(function (text) { D.strings = JSON.parse(text); start(); }, function (err) {
    document.getElementById("count").textContent = "cannot unpack the report data: " + err;
  });
  function start() {
    var ROWH = 26;
    var VERD = D.verdicts;
    var NT = VERD.indexOf("not tested");
    var KNOWN = { "pass": 1, "fail": 1, "unsupported": 1, "crash": 1, "timeout": 1, "skip": 1, "not tested": 1 };
    var SHORT = { "pass": "pass", "fail": "fail", "unsupported": "unsup", "crash": "crash", "timeout": "t/o", "skip": "skip", "not tested": "\u2014" };
    var SEV = ["crash", "timeout", "fail", "unsupported", "pass", "skip", "not tested"];
    var SEVRANK = VERD.map(function (v) { var i = SEV.indexOf(v); return i < 0 ? -1 : i; });
    var DCLS = { agree: "agree", disagree: "results differ", backend_rejects: "backend rejects what CPU accepts",
                 backend_accepts: "backend accepts what CPU rejects", both_reject: "both reject (consistently)", none: "not exercised" };
    var COLS = D.columns;
    var NCOL = COLS.length;

    function $(id) { return document.getElementById(id); }
    function S(i) { return i < 0 ? null : D.strings[i]; }
    function vname(code) { return code < 0 ? "not tested" : VERD[code]; }
    function vcls(v) { return "v-" + (KNOWN[v] ? v.replace(" ", "-") : "other"); }
    function el(tag, cls, text) {
      var e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text !== undefined && text !== null) e.textContent = String(text);
      return e;
    }

    /* ---- rows ---- */
    var ROWS = new Array(D.rows.length);
    for (var i = 0; i < D.rows.length; i++) {
      var r = D.rows[i];
      ROWS[i] = { i: i, name: r[0], lname: r[0].toLowerCase(), fam: D.families[r[1]], kind: r[2],
                  tags: r[3], status: r[4], cells: r[5], overall: r[6] };
    }
    var HAS_STATUS = ROWS.some(function (r) { return r.status >= 0; });
    if (!HAS_STATUS) $("f-status").parentNode.hidden = true;  /* no --coverage: nothing to filter */
    function cellVerdict(row, j) {
      var d = row.cells[j];
      return d < 0 ? NT : D.details[d][0];
    }
    var BAD = { "fail": 1, "crash": 1, "timeout": 1 };
    /* how a cell reads: its verdict, or "xfail" (a failure an expected-failures entry explains:
       known) / "xpass" (an entry's item now passes: the entry is stale) */
    function cellKind(det) {
      var v = vname(det[0]);
      if (det[5] < 0) return v;
      if (BAD[v]) return "xfail";
      if (v === "pass") return "xpass";
      return v;
    }
    function weight(det) {  /* a fail weighs its category's severity (unknown, crash: 3) */
      var cat = det[1] >= 0 && VERD[det[0]] === "fail" ? S(det[1]) : null;
      var w = cat !== null ? D.severity[cat] : undefined;
      return w === undefined ? 3 : w;
    }
    /* a row whose failing cells are all expected reads "xfail" in the Overall column */
    ROWS.forEach(function (row) {
      var bad = 0, known = 0;
      row.cells.forEach(function (d) {
        if (d < 0 || !BAD[VERD[D.details[d][0]]]) return;
        bad++; if (D.details[d][5] >= 0) known++;
      });
      row.known = bad > 0 && known === bad;
    });

    /* ---- state ---- */
    var state = { tab: "matrix", q: "", re: null, bad: false, tag: -1, kind: "", status: -2,
                  check: -1, verdict: -1, group: true, sort: "family", dir: 1, dcheck: -1,
                  cause: -1 /* the matrix lists only this cause's overloads (index into D.causes) */ };
    var items = [];      // rows and family headers currently listed
    var shown = 0;       // rows (not headers) listed
    var rendered = [-1, -1];
    var scroller = $("view-matrix"), spacer = $("spacer"), head = $("head");

    /* ---- toolbar ---- */
    function addOptions(select, values, labels) {
      for (var k = 0; k < values.length; k++) {
        var o = document.createElement("option");
        o.value = String(values[k]);
        o.textContent = labels ? labels[k] : String(values[k]);
        select.appendChild(o);
      }
    }
    var tagIdx = D.tags.map(function (_, k) { return k; }).sort(function (a, b) { return D.tags[a] < D.tags[b] ? -1 : 1; });
    addOptions($("f-tag"), tagIdx, tagIdx.map(function (k) { return D.tags[k]; }));
    var kinds = {}; ROWS.forEach(function (r) { kinds[r.kind] = 1; });
    addOptions($("f-kind"), Object.keys(kinds).sort());
    addOptions($("f-status"), D.statuses.map(function (_, k) { return k; }).concat([-1]), D.statuses.concat(["(unknown)"]));
    addOptions($("f-check"), COLS.map(function (_, k) { return k; }), COLS);
    addOptions($("dtype-check"), COLS.map(function (_, k) { return k; }), COLS);
    addOptions($("f-verdict"), VERD.map(function (_, k) { return k; }), VERD);

    function readSearch() {
      var box = $("search"), q = box.value.trim();
      var m = /^\/(.*)\/([a-z]*)$/.exec(q);
      state.q = q.toLowerCase(); state.re = null; state.bad = false;
      if (q && (m || $("regex").checked)) {
        try { state.re = new RegExp(m ? m[1] : q, "i"); }
        catch (e) { state.bad = true; box.title = String(e.message); }
      }
      box.classList.toggle("bad", state.bad);
      if (!state.bad) box.title = "";
    }

    function matches(row) {
      if (state.bad) return false;
      if (state.re) { if (!state.re.test(row.name)) return false; }
      else if (state.q && row.lname.indexOf(state.q) < 0) return false;
      if (state.tag >= 0 && row.tags.indexOf(state.tag) < 0) return false;
      if (state.kind && row.kind !== state.kind) return false;
      if (state.status !== -2 && row.status !== state.status) return false;
      if (state.cause >= 0 && !CAUSES[state.cause].rows[row.i]) return false;
      if (state.verdict >= 0) {
        var v = state.check < 0 ? row.overall : cellVerdict(row, state.check);
        if (v !== state.verdict) return false;
      }
      return true;
    }

    function sortValue(row) {
      var s = state.sort;
      if (s === "name") return row.name;
      if (s === "kind") return row.kind;
      if (s === "status") return row.status < 0 ? 99 : row.status;
      if (s === "overall") return SEVRANK[row.overall];
      if (s.indexOf("col:") === 0) return SEVRANK[cellVerdict(row, +s.slice(4))];
      if (s.indexOf("dt:") === 0) {
        var o = dtypeSupport(row)[+s.slice(3)];
        if (o >= 0) return o - DOUT.length;  /* dtypes-check outcomes first, worst first */
        var a = dtypeAgg(row), k = +s.slice(3) * 4; return a[k] ? a[k + 3] / a[k] : 2;
      }
      return row.i; /* family order as built */
    }

    function rebuild() {
      var list = [];
      for (var k = 0; k < ROWS.length; k++) if (matches(ROWS[k])) list.push(ROWS[k]);
      if (state.sort !== "family") {
        var keyed = list.map(function (r) { return [sortValue(r), r.i, r]; });
        var dir = state.dir;
        keyed.sort(function (a, b) { return a[0] < b[0] ? -dir : a[0] > b[0] ? dir : a[1] - b[1]; });
        list = keyed.map(function (x) { return x[2]; });
      } else if (state.dir < 0) list.reverse();
      shown = list.length;
      items = list;
      if (state.group && state.sort === "family") {
        items = [];
        var fam = null, hdr = null;
        for (var q = 0; q < list.length; q++) {
          var row = list[q];
          if (row.fam !== fam) { fam = row.fam; hdr = { g: fam, n: 0, pass: 0, fail: 0, w: 0, unsup: 0, known: 0 }; items.push(hdr); }
          hdr.n++;
          var ov = VERD[row.overall];
          if (ov === "pass") hdr.pass++;
          else if (ov === "unsupported") hdr.unsup++;
          else if (BAD[ov]) { if (row.known) hdr.known++; else hdr.fail++; }
          row.cells.forEach(function (d) {
            if (d >= 0 && BAD[VERD[D.details[d][0]]] && D.details[d][5] < 0) hdr.w += weight(D.details[d]);
          });
          items.push(row);
        }
      }
      $("count").textContent = state.bad ? "invalid regex" :
        "showing " + shown.toLocaleString() + " of " + ROWS.length.toLocaleString() + " overloads";
      spacer.style.height = (items.length * ROWH) + "px";
      rendered = [-1, -1];
      renderHead();
      render();
    }

    /* ---- columns ---- */
    /* a column is at least as wide as its label (measured in the header's font, room for the
       sort arrow) and shares what the window has left: every label readable, no sideways scroll
       at 1400 px for the twelve dtypes or a dozen checks */
    var MEASURE = document.createElement("canvas").getContext("2d");
    function fit(label, least) {
      MEASURE.font = "600 12px " + getComputedStyle(document.body).fontFamily;
      return Math.max(least, Math.ceil(MEASURE.measureText(label).width) + 26);
    }
    function columns() {
      var c = [{ key: "name", label: "Overload", min: 240, max: 320 }];
      if (!(state.group && state.sort === "family")) c.push({ key: "family", label: "Family", min: 110, max: 150 });
      if (state.tab === "dtypes") {
        D.dtypes.forEach(function (d, k) { c.push({ key: "dt:" + k, label: d, min: fit(d, 66), dt: k }); });
        return c;
      }
      c.push({ key: "kind", label: "Kind", min: 80, max: 96 });
      if (HAS_STATUS) c.push({ key: "status", label: "Static", min: 118, max: 136 });
      COLS.forEach(function (name, k) { c.push({ key: "col:" + k, label: name, min: fit(name, 64), col: k }); });
      c.push({ key: "overall", label: "Overall", min: fit("Overall", 64), overall: true });
      return c;
    }
    /* widths in px: every column its least width, then what the matrix has left goes first to
       the bounded columns (up to their max), then evenly to the verdict / dtype columns */
    function widths(spec, avail) {
      var w = spec.map(function (c) { return c.min; });
      var left = avail - w.reduce(function (a, b) { return a + b; }, 0);
      spec.forEach(function (c, k) {
        if (c.max && left > 0) { var g = Math.min(left, c.max - c.min); w[k] += g; left -= g; }
      });
      var open = spec.filter(function (c) { return !c.max; }).length;
      if (left > 0 && open) {
        var each = Math.floor(left / open);
        spec.forEach(function (c, k) { if (!c.max) w[k] += each; });
      }
      return w;
    }
    var COLSPEC = [], TEMPLATE = "";
    function renderHead() {
      COLSPEC = columns();
      TEMPLATE = widths(COLSPEC, scroller.clientWidth - 2).map(function (x) { return x + "px"; }).join(" ");
      head.style.gridTemplateColumns = TEMPLATE;
      head.textContent = "";
      COLSPEC.forEach(function (c) {
        var h = el("div", null, c.label);
        h.title = "sort by " + c.label;
        var sortKey = c.key === "family" ? "family" : c.key;
        if (state.sort === sortKey || (c.key === "name" && state.sort === "family" && state.group)) {
          h.classList.add("sorted"); if (state.dir < 0) h.classList.add("desc");
        }
        h.addEventListener("click", function () {
          /* grouped by family, the name column orders within the groups: toggle that order */
          var key = c.key === "name" && state.group ? "family" : sortKey;
          if (state.sort === key) state.dir = -state.dir;
          else { state.sort = key; state.dir = 1; }
          rebuild();
        });
        head.appendChild(h);
      });
      renderTotals();
      // spacer must be as wide as the header for horizontal scrolling
      spacer.style.minWidth = head.scrollWidth + "px";
    }

    /* ---- dtype totals: per dtype, over the overloads listed, how many do not agree ---- */
    var totals = $("totals");
    function renderTotals() {
      totals.hidden = state.tab !== "dtypes";
      if (totals.hidden) return;
      totals.style.gridTemplateColumns = TEMPLATE;
      totals.style.top = head.offsetHeight + "px";
      totals.textContent = "";
      var n = D.dtypes.length, t = [];
      for (var k = 0; k < n; k++) t.push({ agree: 0, both_reject: 0, disagree: 0, backend_rejects: 0, backend_accepts: 0, ex: 0, ok: 0 });
      items.forEach(function (row) {
        if (row.g !== undefined) return;
        var a = dtypeAgg(row), sup = dtypeSupport(row);
        for (var k = 0; k < n; k++) {
          /* the class its cell shows: the dtypes check's outcome where present, else tallies */
          var b = k * 4, cls = sup[k] >= 0 ? (DOUT_CLS[DOUT[sup[k]]] || "none") : dclass(a[b], a[b + 1], a[b + 2], a[b + 3]);
          if (cls === "none") continue;
          t[k][cls]++; t[k].ex += a[b]; t[k].ok += a[b + 3];
        }
      });
      COLSPEC.forEach(function (spec) {
        if (spec.dt === undefined) {
          var lab = el("div", "tot-label", spec.key === "name" ? "overloads not agreeing / using it" : "");
          lab.title = "per dtype, over the " + shown.toLocaleString() + " overloads listed: overloads whose examples with that dtype did not all agree with CPU / overloads whose examples used it";
          totals.appendChild(lab);
          return;
        }
        var x = t[spec.dt], used = x.agree + x.both_reject + x.disagree + x.backend_rejects + x.backend_accepts;
        var bad = x.disagree + x.backend_rejects + x.backend_accepts;
        var e = el("div", "cell tot d-" + (used === 0 ? "none" : bad ? "disagree" : "agree"), used ? bad + " / " + used : "\u2014");
        e.title = D.dtypes[spec.dt] + " over the overloads listed: " + used + " used it; " + x.agree + " agree, " +
          x.disagree + " results differ, " + x.backend_rejects + " backend rejects what CPU accepts, " +
          x.backend_accepts + " backend accepts what CPU rejects, " + x.both_reject + " both reject; examples " +
          x.ex + ", agreed " + x.ok;
        totals.appendChild(e);
      });
    }

    /* ---- dtype aggregation (lazy, per selected check) ---- */
    var AGG = {};
    function dtypeAgg(row) {
      var key = state.dcheck + ":" + row.i;
      var a = AGG[key];
      if (a) return a;
      a = new Int32Array(D.dtypes.length * 4);
      for (var j = 0; j < NCOL; j++) {
        if (state.dcheck >= 0 && j !== state.dcheck) continue;
        var d = row.cells[j];
        if (d < 0) continue;
        var dts = D.details[d][9];
        for (var k = 0; k < dts.length; k++) {
          var b = dts[k][0] * 4;
          a[b] += dts[k][1]; a[b + 1] += dts[k][2]; a[b + 2] += dts[k][3]; a[b + 3] += dts[k][4];
        }
      }
      AGG[key] = a;
      return a;
    }
    /* the dtypes check's per-dtype outcome (details[d][12]); the worst over the row's records */
    var DOUT = D.dtype_outcomes.map(function (x) { return x[0]; });
    var DOUT_TEXT = D.dtype_outcomes.map(function (x) { return x[1]; });
    var DOUT_CLS = { ok: "agree", differs: "disagree", refused: "backend_rejects", raises: "backend_rejects",
                     cpu_rejects: "both_reject", uncompared: "none" };
    var DOUT_SHORT = { ok: "ok", differs: "differs", refused: "refused", raises: "raises",
                       cpu_rejects: "CPU ✗", uncompared: "ran" };
    var SUP = {};
    function dtypeSupport(row) {
      var key = state.dcheck + ":" + row.i;
      var s = SUP[key];
      if (s) return s;
      s = new Int8Array(D.dtypes.length).fill(-1);
      for (var j = 0; j < NCOL; j++) {
        if (state.dcheck >= 0 && j !== state.dcheck) continue;
        var d = row.cells[j];
        if (d < 0) continue;
        var sup = D.details[d][12] || [];
        for (var k = 0; k < sup.length; k++) {
          var t = sup[k][0], o = sup[k][1];
          if (s[t] < 0 || o < s[t]) s[t] = o;
        }
      }
      SUP[key] = s;
      return s;
    }
    function dclass(n, cpu, be, agree) {
      if (n <= 0) return "none";
      if (agree >= n) return cpu > 0 ? "agree" : "both_reject";
      if (be < cpu) return "backend_rejects";
      if (be > cpu) return "backend_accepts";
      return "disagree";
    }

    /* ---- rendering ---- */
    function makeRow(item, idx) {
      var div = el("div", "grid-row");
      div.style.top = (idx * ROWH) + "px";
      if (item.g !== undefined) {
        div.className = "grid-row group";
        var cell = el("div", null, item.g);
        var parts = [item.n + " overload" + (item.n === 1 ? "" : "s"), item.pass + " pass"];
        if (item.fail) parts.push(item.fail + " failing (severity-weighted " + item.w + ")");
        if (item.unsup) parts.push(item.unsup + " unsupported");
        if (item.known) parts.push(item.known + " with expected failures only");
        cell.appendChild(el("span", "fam-stats", parts.join(" \u00b7 ")));
        div.appendChild(cell);
        return div;
      }
      div.style.gridTemplateColumns = TEMPLATE;
      for (var c = 0; c < COLSPEC.length; c++) {
        var spec = COLSPEC[c], e;
        if (spec.key === "name") { e = el("div", "name", item.name); e.title = item.name; e._row = item.i; e._col = -2; }
        else if (spec.key === "family") e = el("div", "muted", item.fam);
        else if (spec.key === "kind") e = el("div", "muted", item.kind);
        else if (spec.key === "status") {
          var st = item.status < 0 ? null : D.statuses[item.status];
          e = el("div", "stat s-" + (st || "unknown"), st || "?");
          e.title = st ? "static status: " + st : "static status unknown (no --coverage)";
        } else if (spec.dt !== undefined && dtypeSupport(item)[spec.dt] >= 0) {
          var out = DOUT[dtypeSupport(item)[spec.dt]];
          e = el("div", "cell d-" + (DOUT_CLS[out] || "none"), DOUT_SHORT[out] || out);
          e.title = D.dtypes[spec.dt] + ": " + out + " — " + DOUT_TEXT[DOUT.indexOf(out)] + " (dtypes check)";
          e._row = item.i; e._dt = spec.dt;
        } else if (spec.dt !== undefined) {
          var a = dtypeAgg(item), b = spec.dt * 4, cls = dclass(a[b], a[b + 1], a[b + 2], a[b + 3]);
          e = el("div", "cell d-" + cls, a[b] ? a[b + 3] + "/" + a[b] : "\u2014");
          e.title = D.dtypes[spec.dt] + ": " + DCLS[cls] + (a[b] ? " \u2014 examples " + a[b] + ", CPU ok " + a[b + 1] +
            ", backend ok " + a[b + 2] + ", agree " + a[b + 3] : "");
          e._row = item.i; e._dt = spec.dt;
        } else {
          var code = spec.overall ? item.overall : cellVerdict(item, spec.col);
          var v = vname(code);
          var d = spec.overall ? -1 : item.cells[spec.col];
          var kind = d >= 0 ? cellKind(D.details[d]) : spec.overall && item.known && BAD[v] ? "xfail" : v;
          e = el("div", "cell " + (kind === "xfail" || kind === "xpass" ? "x-" + kind.slice(1) : vcls(v)), SHORT[kind] || kind);
          if (!spec.overall) {
            if (d >= 0) {
              var det = D.details[d];
              if (det[5] >= 0 && kind === v) e.classList.add("exp");
              e.title = COLS[spec.col] + ": " + v + (det[1] >= 0 ? " (" + S(det[1]) + ")" : "") +
                (det[5] >= 0 ? (kind === "xpass" ? " \u2014 an expected-failure entry names it, but it passes (stale entry): " :
                  " \u2014 expected failure: ") + S(det[5]) : "");
              e._row = item.i; e._col = spec.col;
            } else e.title = COLS[spec.col] + ": not tested";
          } else {
            e.title = "overall: " + v + (kind === "xfail" ? " \u2014 every failure of this overload is an expected one" : "");
            e._row = item.i; e._col = -2;
          }
        }
        div.appendChild(e);
      }
      return div;
    }

    function render() {
      if (state.tab !== "matrix" && state.tab !== "dtypes") return;
      var top = scroller.scrollTop, h = scroller.clientHeight || 600;
      var first = Math.max(0, Math.floor(top / ROWH) - 8);
      var last = Math.min(items.length, Math.ceil((top + h) / ROWH) + 8);
      if (first === rendered[0] && last === rendered[1]) return;
      rendered = [first, last];
      var frag = document.createDocumentFragment();
      for (var k = first; k < last; k++) frag.appendChild(makeRow(items[k], k));
      spacer.textContent = "";
      spacer.appendChild(frag);
    }
    var pending = false;
    scroller.addEventListener("scroll", function () {
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () { pending = false; render(); });
    });
    window.addEventListener("resize", function () {
      if (state.tab === "matrix" || state.tab === "dtypes") { renderHead(); rendered = [-1, -1]; render(); }
    });

    /* ---- detail drawer ---- */
    var drawer = $("drawer"), dbody = $("d-body");
    function dl(pairs) {
      var list = el("dl");
      pairs.forEach(function (p) {
        if (p[1] === null || p[1] === undefined || p[1] === "") return;
        list.appendChild(el("dt", null, p[0]));
        list.appendChild(el("dd", null, p[1]));
      });
      return list;
    }
    function copyText(text, btn) {
      function done(ok) { btn.textContent = ok ? "Copied" : "Copy failed \u2014 select the text"; setTimeout(function () { btn.textContent = "Copy"; }, 1500); }
      function fallback() {
        var ta = document.createElement("textarea");
        ta.value = text; ta.style.position = "fixed"; ta.style.opacity = "0";
        document.body.appendChild(ta); ta.select();
        var ok = false; try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
        document.body.removeChild(ta); return ok;
      }
      if (navigator.clipboard && window.isSecureContext) {
        /* a permission prompt that never resolves must not leave the button stuck */
        var settled = false;
        var timer = setTimeout(function () { if (!settled) { settled = true; done(fallback()); } }, 1000);
        navigator.clipboard.writeText(text).then(function () {
          if (!settled) { settled = true; clearTimeout(timer); done(true); }
        }, function () {
          if (!settled) { settled = true; clearTimeout(timer); done(fallback()); }
        });
      } else done(fallback());
    }
    function openDrawer(title, verdict) {
      $("d-title").textContent = title;
      var pill = $("d-verdict");
      pill.textContent = DCLS[verdict] && !KNOWN[verdict] ? DCLS[verdict] : (verdict || "");
      pill.className = "pill " + (verdict ? (KNOWN[verdict] ? vcls(verdict) : (verdict.indexOf(" ") < 0 && DCLS[verdict] ? "d-" + verdict : "v-other")) : "");
      pill.hidden = !verdict;
      dbody.textContent = "";
      drawer.classList.add("open");
      drawer.setAttribute("aria-hidden", "false");
    }
    function rowFacts(row) {
      return [["family", row.fam], ["kind", row.kind],
              ["static status", row.status < 0 ? "unknown" : D.statuses[row.status]],
              ["tags", row.tags.map(function (t) { return D.tags[t]; }).join(", ")]];
    }
    var opened = null;  /* "overload[/column]" shown in the drawer, kept in the URL hash */
    function showCell(row, j, key) {
      var d = row.cells[j], det = D.details[d], v = vname(det[0]);
      openDrawer(row.name, v);
      opened = row.name + "/" + COLS[j]; writeHash();
      var src = D.sources[det[10]];
      dbody.appendChild(dl([["check", COLS[j]], ["verdict", v], ["category", S(det[1])],
        ["expected", S(det[5])], ["missing op", S(det[3])], ["examples", det[6]],
        ["duration", det[7] === null ? null : det[7] + " s"], ["seed", det[8]],
        ["record", src + ":" + det[11]]].concat(rowFacts(row))));
      var msg = S(det[2]);
      if (msg) { dbody.appendChild(el("h4", null, "Message")); dbody.appendChild(el("div", "msg", msg)); }
      var repro = S(det[4]);
      var h = el("h4", null, "Repro");
      if (repro) {
        var btn = el("button", "btn", "Copy"); btn.id = "copy-repro";
        btn.addEventListener("click", function () { copyText(repro, btn); });
        h.appendChild(btn);
        dbody.appendChild(h);
        var pre = el("pre", "repro", repro); pre.id = "repro";
        dbody.appendChild(pre);
      } else { dbody.appendChild(h); dbody.appendChild(el("div", "muted", "no repro recorded for this verdict")); }
      if (det[13] && det[13].length) showFailures(det[13], key);
      if (det[9].length) {
        dbody.appendChild(el("h4", null, "Per dtype"));
        var t = el("table", "plain"), tr = el("tr");
        ["dtype", "examples", "CPU ok", "backend ok", "agree"].forEach(function (x) { tr.appendChild(el("th", null, x)); });
        t.appendChild(tr);
        det[9].slice().sort(function (a, b) { return a[0] - b[0]; }).forEach(function (x) {
          var r = el("tr");
          r.appendChild(el("td", "mono", D.dtypes[x[0]]));
          for (var k = 1; k < 5; k++) r.appendChild(el("td", null, x[k]));
          t.appendChild(r);
        });
        dbody.appendChild(t);
      }
    }
    /* a verdict with several distinct failures: each with its own message and repro (the
       one a cause link asked for open); [key, category, message, repro, expected] string indices */
    function showFailures(list, key) {
      dbody.appendChild(el("h4", null, "Distinct failures (" + list.length + ") \u2014 the message and repro above are the first"));
      var hit = null;
      list.forEach(function (f) {
        var box = el("details", "failure" + (f[4] >= 0 ? " known" : ""));
        var sum = el("summary");
        sum.appendChild(el("span", "c-cat", S(f[1]) || "(no category)"));
        sum.appendChild(el("span", "f-state " + (f[4] >= 0 ? "known" : "new"), f[4] >= 0 ? "expected" : "new"));
        sum.appendChild(document.createTextNode(" " + (S(f[2]) || "")));
        box.appendChild(sum);
        box.appendChild(dl([["fingerprint", S(f[0])], ["expected", S(f[4])]]));
        var repro = S(f[3]);
        if (repro) box.appendChild(reproBlock(repro, null));
        if (key !== undefined && key >= 0 && f[0] === key) { box.open = true; box.classList.add("hit"); hit = box; }
        dbody.appendChild(box);
      });
      if (hit) setTimeout(function () { hit.scrollIntoView({ block: "nearest" }); }, 0);
    }
    function reproBlock(repro, label) {
      var wrap = el("div", "repro-block"), h = el("h4", null, label || "Repro");
      var btn = el("button", "btn copy", "Copy");
      btn.addEventListener("click", function (ev) { ev.preventDefault(); copyText(repro, btn); });
      h.appendChild(btn);
      wrap.appendChild(h);
      wrap.appendChild(el("pre", "repro", repro));
      return wrap;
    }
    function showOverload(row) {
      openDrawer(row.name, vname(row.overall));
      opened = row.name; writeHash();
      dbody.appendChild(dl(rowFacts(row)));
      var t = el("table", "plain"), tr = el("tr");
      ["check", "verdict", "message"].forEach(function (x) { tr.appendChild(el("th", null, x)); });
      t.appendChild(tr);
      COLS.forEach(function (name, j) {
        var r = el("tr"), d = row.cells[j];
        var c = el("td", "mono", name), v = vname(d < 0 ? NT : D.details[d][0]);
        r.appendChild(c);
        var vc = el("td"); vc.appendChild(el("span", "pill " + vcls(v), v)); r.appendChild(vc);
        r.appendChild(el("td", null, d < 0 ? "" : S(D.details[d][2])));
        if (d >= 0) { r.style.cursor = "pointer"; r.addEventListener("click", function () { showCell(row, j); }); }
        t.appendChild(r);
      });
      dbody.appendChild(t);
    }
    function showDtype(row, k) {
      var a = dtypeAgg(row), b = k * 4, cls = dclass(a[b], a[b + 1], a[b + 2], a[b + 3]);
      var so = dtypeSupport(row)[k], sname = so >= 0 ? DOUT[so] : null;
      if (sname) cls = DOUT_CLS[sname] || "none";
      openDrawer(row.name + " \u00b7 " + D.dtypes[k], cls);
      opened = row.name + "/dtype:" + D.dtypes[k]; writeHash();
      dbody.appendChild(dl([["dtype", D.dtypes[k]],
        ["dtypes check", sname ? sname + " \u2014 " + DOUT_TEXT[so] : null],
        ["outcome", DCLS[cls]], ["examples", a[b]],
        ["CPU ok", a[b + 1]], ["backend ok", a[b + 2]], ["agree", a[b + 3]],
        ["counted over", state.dcheck < 0 ? "all checks" : COLS[state.dcheck]]]));
      var t = el("table", "plain"), tr = el("tr");
      ["check", "examples", "CPU ok", "backend ok", "agree"].forEach(function (x) { tr.appendChild(el("th", null, x)); });
      t.appendChild(tr);
      COLS.forEach(function (name, j) {
        var d = row.cells[j];
        if (d < 0) return;
        D.details[d][9].forEach(function (x) {
          if (x[0] !== k) return;
          var r = el("tr");
          r.appendChild(el("td", "mono", name));
          for (var q = 1; q < 5; q++) r.appendChild(el("td", null, x[q]));
          r.style.cursor = "pointer";
          r.addEventListener("click", function () { showCell(row, j); });
          t.appendChild(r);
        });
      });
      dbody.appendChild(t);
    }
    function closeDrawer() {
      drawer.classList.remove("open"); drawer.setAttribute("aria-hidden", "true");
      if (opened) { opened = null; writeHash(); }
    }
    $("d-close").addEventListener("click", closeDrawer);
    document.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") closeDrawer();
      else if (ev.key === "/" && document.activeElement !== $("search")) { ev.preventDefault(); $("search").focus(); }
    });
    spacer.addEventListener("click", function (ev) {
      var t = ev.target;
      while (t && t !== spacer && t._row === undefined) t = t.parentNode;
      if (!t || t === spacer) return;
      var row = ROWS[t._row];
      var prev = spacer.querySelector(".sel"); if (prev) prev.classList.remove("sel");
      if (t.classList.contains("cell")) t.classList.add("sel");
      if (t._dt !== undefined) showDtype(row, t._dt);
      else if (t._col >= 0) showCell(row, t._col);
      else showOverload(row);
    });

    /* ---- other tabs ---- */
    var list = $("view-list");
    function table(headers, rows) {
      var t = el("table", "plain"), tr = el("tr");
      headers.forEach(function (x) { tr.appendChild(el("th", null, x)); });
      t.appendChild(tr);
      rows.forEach(function (cells) {
        var r = el("tr");
        cells.forEach(function (c, k) { r.appendChild(el("td", k === 0 ? "mono" : null, c)); });
        t.appendChild(r);
      });
      return t;
    }
    function textMatch(s) {
      if (state.bad) return false;
      if (state.re) return state.re.test(s);
      return !state.q || s.toLowerCase().indexOf(state.q) >= 0;
    }
    function renderList() {
      list.textContent = "";
      var rows, n;
      if (state.tab === "variants") {
        rows = D.missing_variants.filter(function (x) { return textMatch(String(x.family)); })
          .map(function (x) { return [x.family, (x.present || []).join(", "), (x.missing || []).join(", ")]; });
        n = D.missing_variants.length;
        list.appendChild(el("p", "defs", "Families where the backend has some variants (functional / in-place / out) but not others. From the static coverage."));
        list.appendChild(rows.length ? table(["family", "present", "missing"], rows) : el("div", "empty", n ? "no family matches the search" : "none listed (needs --coverage)"));
      } else if (state.tab === "gaps") {
        rows = D.dtype_gaps.filter(function (x) { return textMatch(String(x.overload)); })
          .map(function (x) { return [x.overload, x.backend, x.dtypes.join(", ")]; });
        n = D.dtype_gaps.length;
        list.appendChild(el("p", "defs", "Dtypes CPU supports that the backend refuses (missing kernel or dtype error), per overload and backend. From the dtypes check."));
        list.appendChild(rows.length ? table(["overload", "backend", "dtypes refused"], rows) : el("div", "empty", n ? "no overload matches the search" : "none (or no dtypes check in the results)"));
      } else if (state.tab === "backward") {
        var bp = D.backward_parity || [];
        rows = bp.filter(function (x) { return textMatch(String(x.forward)); })
          .map(function (x) {
            var found = x.verdict === null ? "no autograd verdict" : x.verdict + (x.category ? " (" + x.category + ")" : "") + (x.missing_op ? ": " + x.missing_op : "");
            return [x.forward, (x.predicted || []).join(", ") || "\u2014", found, x.relation];
          });
        n = bp.length;
        list.appendChild(el("p", "defs", "Static prediction beside the autograd check, per forward overload: the backward ops (per derivatives.yaml) the static coverage says the backend lacks, and what the autograd check found (unsupported names the backward op the dispatcher reported). agree = the check found a predicted op missing; static only = predicted, but the backward ran; inconclusive = the autograd item crashed or timed out; dynamic only = found missing, not predicted."));
        list.appendChild(rows.length ? table(["forward", "static: missing backward ops", "autograd check", "relation"], rows) : el("div", "empty", n ? "no overload matches the search" : "none listed (static needs --coverage; dynamic needs --checks autograd)"));
      } else if (state.tab === "decomp") {
        var dp = D.decomposition_parity || [];
        rows = dp.filter(function (x) { return textMatch(String(x.overload)); })
          .map(function (x) {
            var found = x.verdict === null ? "no compile verdict" : x.verdict + (x.category ? " (" + x.category + ")" : "") + (x.missing_op ? ": " + x.missing_op : "");
            return [x.overload, (x.predicted || []).join(", ") || "\u2014", found, x.relation];
          });
        n = dp.length;
        var ds = D.decompositions;
        list.appendChild(el("p", "defs", "The static twin beside the compile check, per decomposed overload: the ops its compiled graph calls (traced decomposition" + (ds ? ", compile backend " + ds.compile_backend + ", table " + ds.table + ": " + ds.summary.decomposed + " decomposed, " + ds.summary.untraced + " not traced" : "") + ") that the static coverage says the backend lacks, and what the compile check found (unsupported names the op the dispatcher reported). agree = the check found a predicted op missing; static only = predicted, but the compiled call ran; inconclusive = the compile item crashed or timed out; dynamic only = found missing, not predicted."));
        list.appendChild(rows.length ? table(["overload", "static: missing ops of its decomposition", "compile check", "relation"], rows) : el("div", "empty", n ? "no overload matches the search" : "none listed (static needs a coverage from conformance coverage --decompositions; dynamic needs --checks compile)"));
      } else {
        n = D.runs.length;
        rows = D.runs.map(function (r) {
          return [r.backend, r.device, r.dispatch_key, r.torch_version, r.seed, r.started_at,
                  (r.checks || []).join(", "), r.ops === null ? "all" : r.ops, r.max_examples, r.hostname, r.opconform_version, r.source];
        });
        list.appendChild(el("h4", null, "Runs"));
        list.appendChild(rows.length ? table(["backend", "device", "dispatch key", "torch", "seed", "started", "checks", "ops", "max examples", "host", "opconform", "file"], rows) : el("div", "empty", "no run header"));
        list.appendChild(el("h4", null, "Sources"));
        list.appendChild(table(["results file"], D.sources.map(function (s) { return [s]; })));
        list.appendChild(el("p", "defs", "Overload facts: " + D.annotation.note + ". Total: " + D.universe + "."));
        if (D.warnings.length) { list.appendChild(el("h4", null, "Skipped lines")); list.appendChild(table(["warning"], D.warnings.map(function (w) { return [w]; }))); }
      }
      $("count").textContent = state.tab === "runs" ? "" : "showing " + rows.length + " of " + n;
    }

    function legend() {
      var lg = $("legend"); lg.textContent = "";
      var entries = state.tab === "dtypes" ?
        Object.keys(DCLS).map(function (k) { return ["d-" + k, DCLS[k]]; }) :
        SEV.map(function (v) { return [vcls(v), v]; }).concat([
          ["x-fail", "xfail: an expected failure (known; hover for the reason)"],
          ["x-pass", "xpass: expected to fail, now passes (stale entry)"]]);
      if (state.tab !== "matrix" && state.tab !== "dtypes") return;
      entries.forEach(function (x) { var s = el("span"); s.appendChild(el("i", x[0])); s.appendChild(document.createTextNode(x[1])); lg.appendChild(s); });
      if (state.tab === "dtypes") lg.appendChild(el("span", null, "cell = examples that agreed / examples that used the dtype"));
      else lg.appendChild(el("span", null, "click a cell for the message and repro; click a name for all its checks"));
    }

    function setTab(tab) {
      state.tab = tab;
      var btns = $("tabs").querySelectorAll("button");
      for (var k = 0; k < btns.length; k++) btns[k].classList.toggle("on", btns[k].getAttribute("data-tab") === tab);
      var isMatrix = tab === "matrix" || tab === "dtypes";
      scroller.hidden = !isMatrix; list.hidden = isMatrix;
      var mx = document.querySelectorAll(".mx-only");
      for (var q = 0; q < mx.length; q++) mx[q].classList.toggle("off", !isMatrix);
      $("toolbar").hidden = tab === "runs";
      $("dtype-check-wrap").hidden = tab !== "dtypes";
      if (state.sort.indexOf("dt:") === 0 && tab !== "dtypes") state.sort = "family";
      if (state.sort.indexOf("col:") === 0 && tab === "dtypes") state.sort = "family";
      legend();
      if (isMatrix) rebuild(); else renderList();
    }
    $("tabs").addEventListener("click", function (ev) {
      var t = ev.target.closest("button"); if (t) { setTab(t.getAttribute("data-tab")); writeHash(); }
    });

    function readControls() {
      readSearch();
      state.tag = $("f-tag").value === "" ? -1 : +$("f-tag").value;
      state.kind = $("f-kind").value;
      state.status = $("f-status").value === "" ? -2 : +$("f-status").value;
      state.check = $("f-check").value === "" ? -1 : +$("f-check").value;
      state.verdict = $("f-verdict").value === "" ? -1 : +$("f-verdict").value;
      state.group = $("group").checked;
      state.dcheck = $("dtype-check").value === "" ? -1 : +$("dtype-check").value;
    }
    function onFilter() {
      readControls();
      if (state.tab === "matrix" || state.tab === "dtypes") { scroller.scrollTop = 0; rebuild(); } else renderList();
      writeHash();
    }
    ["search"].forEach(function (id) { $(id).addEventListener("input", onFilter); });
    ["regex", "f-tag", "f-kind", "f-status", "f-check", "f-verdict", "group"].forEach(function (id) { $(id).addEventListener("change", onFilter); });
    $("dtype-check").addEventListener("change", function () { AGG = {}; onFilter(); });

    /* ---- the view lives in the URL hash, so a link can point at it:
       #tab=dtypes&q=add&verdict=fail&check=promotion&open=add.Tensor/promotion ---- */
    var SELECTS = [["f-tag", "tag", D.tags], ["f-kind", "kind", null],
                   ["f-status", "status", D.statuses], ["f-check", "check", COLS],
                   ["f-verdict", "verdict", VERD], ["dtype-check", "dtypes", COLS]];
    function writeHash() {
      var p = new URLSearchParams();
      if (state.tab !== "matrix") p.set("tab", state.tab);
      var q = $("search").value.trim();
      if (q) p.set("q", q);
      if ($("regex").checked) p.set("regex", "1");
      SELECTS.forEach(function (x) {
        var v = $(x[0]).value;
        if (v === "") return;
        p.set(x[1], x[2] ? (+v < 0 ? "unknown" : x[2][+v]) : v);
      });
      if (!$("group").checked) p.set("group", "0");
      if (state.cause >= 0) p.set("cause", String(state.cause + 1));
      if (opened) p.set("open", opened);
      var h = p.toString();
      try { history.replaceState(null, "", h ? "#" + h : location.pathname + location.search); } catch (e) { /* sandboxed */ }
    }
    function applyHash() {
      var p = new URLSearchParams(location.hash.replace(/^#/, ""));
      if (p.has("q")) $("search").value = p.get("q");
      $("regex").checked = p.get("regex") === "1";
      $("group").checked = p.get("group") !== "0";
      SELECTS.forEach(function (x) {
        if (!p.has(x[1])) return;
        var name = p.get(x[1]);
        var v = x[2] ? (name === "unknown" ? -1 : x[2].indexOf(name)) : name;
        if (x[2] && v === -1 && name !== "unknown") return;
        var sel = $(x[0]);
        for (var k = 0; k < sel.options.length; k++) if (sel.options[k].value === String(v)) sel.value = String(v);
      });
      readControls();
      var cause = +(p.get("cause") || 0);
      if (cause >= 1 && cause <= CAUSES.length) setCause(cause - 1, false);
      var tab = p.get("tab");
      setTab(["matrix", "dtypes", "variants", "backward", "decomp", "gaps", "runs"].indexOf(tab) >= 0 ? tab : "matrix");
      var open = p.get("open");
      if (open) {
        var cut = open.indexOf("/"), name = cut < 0 ? open : open.slice(0, cut), col = cut < 0 ? null : open.slice(cut + 1);
        var row = null;
        for (var k = 0; k < ROWS.length; k++) if (ROWS[k].name === name) { row = ROWS[k]; break; }
        if (row) {
          if (col === null) showOverload(row);
          else if (col.indexOf("dtype:") === 0 && D.dtypes.indexOf(col.slice(6)) >= 0) showDtype(row, D.dtypes.indexOf(col.slice(6)));
          else if (COLS.indexOf(col) >= 0 && row.cells[COLS.indexOf(col)] >= 0) showCell(row, COLS.indexOf(col));
        }
      }
    }

    /* ---- by cause: failures grouped by fingerprint across overloads and checks
       (reports.page.causes_data; the section the page opens on) ---- */
    var CAUSES = D.causes || [];
    var ROW_OF = {};
    ROWS.forEach(function (r) { ROW_OF[r.name] = r; });
    CAUSES.forEach(function (c, n) {
      c.n = n;
      c.rows = {};
      c.members.forEach(function (m) { var r = ROW_OF[m[0]]; if (r) c.rows[r.i] = 1; });
      c.text = [S(c.title), S(c.message), S(c.key), c.category || "", c.checks.join(" "),
                c.dtypes.join(" "), c.backend || "", c.members.map(function (m) { return m[0]; }).join(" ")]
        .join("\n").toLowerCase();
    });
    var causeList = $("cause-list"), CAUSE_PAGE = 25, causeLimit = CAUSE_PAGE;
    var MULTI = D.backends.length > 1;
    function plural(n, word) { return n.toLocaleString() + " " + word + (n === 1 ? "" : "s"); }
    function memberLink(c, name, col, text, cls) {
      var a = el("a", cls, text);
      a.href = "#" + new URLSearchParams({ open: name + "/" + col }).toString();
      a.title = name + " \u00b7 " + col + ": open this cell";
      a.addEventListener("click", function (ev) {
        ev.preventDefault();
        var r = ROW_OF[name], j = COLS.indexOf(col);
        if (r && j >= 0 && r.cells[j] >= 0) showCell(r, j, c.key);
      });
      return a;
    }
    function causeBody(c) {
      var b = el("div", "c-body");
      b.appendChild(dl([["fingerprint", S(c.key)], ["backend", MULTI ? c.backend : null],
        ["checks", c.checks.join(", ")], ["dtypes", c.dtypes.join(", ") || "\u2014"],
        ["failures", plural(c.failures, "failure") + " \u2014 " + c.new.toLocaleString() + " new, " + c.expected.toLocaleString() + " expected"],
        ["expected", S(c.reason)]]));
      b.appendChild(el("h4", null, "Example message (the first)"));
      b.appendChild(el("div", "msg", S(c.message)));
      var h = el("h4", null, plural(c.overloads, "overload"));
      var show = el("button", "btn", "Show in the matrix");
      show.addEventListener("click", function () { setCause(c.n, true); });
      h.appendChild(show);
      b.appendChild(h);
      var ul = el("ul", "c-members");
      c.members.forEach(function (m) {
        var li = el("li");
        li.appendChild(memberLink(c, m[0], m[1][0][0], m[0], "c-ov"));
        m[1].forEach(function (x) {
          var chip = memberLink(c, m[0], x[0], x[0], "c-chk " + (x[1] ? "new" : "known"));
          chip.title += x[1] ? " (new)" : " (expected)";
          li.appendChild(chip);
        });
        ul.appendChild(li);
      });
      b.appendChild(ul);
      var repro = S(c.repro);
      if (repro) b.appendChild(reproBlock(repro, "Repro \u2014 the shortest of the cause, " + c.repro_at[0] + " \u00b7 " + c.repro_at[1]));
      else b.appendChild(el("div", "muted", "no repro recorded for this cause"));
      return b;
    }
    function causeItem(c) {
      var d = el("details", "cause " + (c.new ? "is-new" : "is-known"));
      d.id = "cause-" + (c.n + 1);
      var s = el("summary");
      var nums = el("span", "c-nums");
      nums.appendChild(el("b", null, c.failures.toLocaleString()));
      nums.appendChild(document.createTextNode(c.failures === 1 ? " failure in " : " failures in "));
      nums.appendChild(el("b", null, c.overloads.toLocaleString()));
      nums.appendChild(document.createTextNode(c.overloads === 1 ? " overload" : " overloads"));
      s.appendChild(nums);
      s.appendChild(el("span", "c-state " + (c.new ? "new" : "known"),
        c.new ? (c.expected ? c.new + " new \u00b7 " + c.expected + " expected" : "new") : "expected"));
      var head = el("span", "c-head");
      head.appendChild(el("span", "c-cat", c.category || "(no category)"));
      c.lead.forEach(function (x) { head.appendChild(el("span", "c-dt", x)); });
      head.appendChild(el("span", "c-title", S(c.title)));
      head.appendChild(el("span", "c-msg", S(c.message)));
      head.title = S(c.key);
      s.appendChild(head);
      s.appendChild(el("span", "c-meta", c.checks.join(", ") + (MULTI ? " \u00b7 " + c.backend : "")));
      d.appendChild(s);
      d.addEventListener("toggle", function () {
        if (d.open && !d._filled) { d._filled = true; d.appendChild(causeBody(c)); }
      });
      return d;
    }
    function renderCauses() {
      if (!causeList) return;
      var q = $("cause-search").value.trim().toLowerCase(), onlyNew = $("cause-new").checked;
      var list = CAUSES.filter(function (c) { return (!onlyNew || c.new > 0) && (!q || c.text.indexOf(q) >= 0); });
      causeList.textContent = "";
      list.slice(0, causeLimit).forEach(function (c) { causeList.appendChild(causeItem(c)); });
      if (!list.length) causeList.appendChild(el("div", "empty", "no cause matches the filter"));
      if (list.length > causeLimit) {
        var more = el("button", "btn more", "Show all " + list.length.toLocaleString() + " causes");
        more.id = "cause-more";
        more.addEventListener("click", function () { causeLimit = Infinity; renderCauses(); });
        causeList.appendChild(more);
      }
      $("cause-count").textContent = "showing " + Math.min(list.length, causeLimit).toLocaleString() +
        " of " + (list.length === CAUSES.length ? plural(CAUSES.length, "cause") :
                  list.length.toLocaleString() + " matching (" + plural(CAUSES.length, "cause") + " in all)");
    }
    /* the matrix lists only the overloads of cause n (-1: all); a chip in the toolbar undoes it */
    function setCause(n, jump) {
      state.cause = n;
      var chip = $("cause-chip");
      chip.hidden = n < 0;
      if (n >= 0) {
        var c = CAUSES[n];
        $("cause-chip-text").textContent = "cause #" + (n + 1) + ": " + plural(c.overloads, "overload");
        chip.title = S(c.key);
      }
      if (!jump) return;
      if (state.tab !== "matrix" && state.tab !== "dtypes") setTab("matrix");
      else { scroller.scrollTop = 0; rebuild(); }
      writeHash();
      $("tabs").scrollIntoView({ block: "start" });
    }
    $("cause-chip-clear").addEventListener("click", function () {
      setCause(-1, false); scroller.scrollTop = 0;
      if (state.tab === "matrix" || state.tab === "dtypes") rebuild();
      writeHash();
    });
    if (causeList) {
      $("cause-search").addEventListener("input", function () { causeLimit = CAUSE_PAGE; renderCauses(); });
      $("cause-new").addEventListener("change", function () { causeLimit = CAUSE_PAGE; renderCauses(); });
      renderCauses();
    }

    applyHash();
    window.__report = { ready: true, buildMs: performance.now() - T0, readyAt: performance.now(),
                        rows: ROWS.length, shown: function () { return shown; } };
    document.body.setAttribute("data-ready", "1");
  }
})();
