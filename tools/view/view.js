/* gwr view: the page (tools/view/view.js, inlined by `gwr view` after dagre).
 * Plain browser JavaScript, no network. The data is the JSON of #gwr-data (docs/cli.md,
 * `gwr view`). Layout: nested, one dagre call per expanded container (the top level, an
 * expanded group, an expanded If/Loop/Scan layer, one of its bodies), each over that
 * container's direct children only (<= 200 by construction of the groups); edges between
 * layers of different containers are drawn between their absolute positions. */
(function () {
  'use strict';
  var T0 = performance.now();
  var EXPAND_LIMIT = 3000;     /* up to this many layers everything starts expanded */
  var REVEAL_LIMIT = 50;       /* search: expand the groups of at most this many matches */
  var CH = 6.7;                /* width of one character of the node font (11px monospace) */
  var timing = {};
  var data = JSON.parse(document.getElementById('gwr-data').textContent);
  timing.parse = performance.now() - T0;
  var models = data.models || [];
  var $ = function (id) { return document.getElementById(id); };

  function esc(s) {
    return String(s == null ? '' : s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function fmtNum(n) {
    if (n == null || n < 0) return 'unknown';
    if (n >= 1e9) return (n / 1e9).toFixed(2) + ' G';
    if (n >= 1e6) return (n / 1e6).toFixed(2) + ' M';
    if (n >= 1e3) return (n / 1e3).toFixed(1) + ' k';
    return String(n);
  }
  function fmtUs(us) { return us >= 1000 ? (us / 1000).toFixed(3) + ' ms' : us.toFixed(1) + ' us'; }
  function typeText(t) {
    if (!t) return '';
    return (t.dtype || '?') + (t.shape == null ? '[?]' : '[' + t.shape.replace(/x/g, ',') + ']');
  }

  /* ---------- profile ---------- */
  var prof = data.profile || null;
  var profMax = 0;
  if (prof && prof.layers) for (var pn in prof.layers) profMax = Math.max(profMax, prof.layers[pn].us || 0);
  function heat(us) {                      /* yellow (cold) -> red (hot), square-root scale */
    var t = profMax > 0 ? Math.sqrt(Math.min(1, us / profMax)) : 0;
    return 'hsl(' + (60 - 60 * t).toFixed(0) + ',100%,' + (88 - 30 * t).toFixed(0) + '%)';
  }

  /* ---------- one model (or body) as a scope of one pane ---------- */
  var scopeSeq = 0;
  /* codes: a layer i is i (>= 0), a group g is -(g + 1); container keys: 'r' the top, a group's
   * code, or a layer's code for an If/Loop/Scan layer holding its bodies. */
  function Scope(pane, model, owner, title) {
    this.id = scopeSeq++;
    this.pane = pane;
    this.m = model;
    this.owner = owner;            /* {scope, layer} for a body, null for a top-level model */
    this.title = title || '';
    pane.scopes[this.id] = this;
    var L = model.layers || [], G = model.groups || [], i, g;
    this.L = L; this.G = G;
    this.gExp = new Uint8Array(G.length);
    this.lExp = new Uint8Array(L.length);
    this.cache = new Map();
    this.pos = new Map();
    this.bodies = new Map();       /* layer -> [Scope] */
    /* children of every container, in topological order (layers are topological) */
    var kids = new Array(G.length), root = [], gFirst = new Array(G.length).fill(Infinity);
    for (g = 0; g < G.length; g++) kids[g] = [];
    var gdepth = new Int32Array(G.length);
    for (g = 0; g < G.length; g++) { var d = 0, x = G[g].parent; while (x >= 0 && d < 1000) { d++; x = G[x].parent; } gdepth[g] = d + 1; }
    this.gdepth = gdepth;
    /* a weight read by one layer of its own group is drawn inside that layer's box (a line of
     * it, still an element .gwr-node with its name), not as a node of the layout */
    var Tt = model.tensors || [], nUse = new Int32Array(Tt.length), lastUse = new Int32Array(Tt.length);
    for (i = 0; i < L.length; i++) (L[i].in || []).forEach(function (t) { if (t >= 0) { nUse[t]++; lastUse[t] = i; } });
    this.attachedTo = new Int32Array(L.length).fill(-1);
    this.attached = new Map();
    for (i = 0; i < L.length; i++) {
      if (!this.isWeight(i) || L[i].out.length !== 1) continue;
      var wt = L[i].out[0], user = lastUse[wt];
      if (nUse[wt] !== 1 || L[user].group !== L[i].group || (model.outputs || []).some(function (o) { return o.name === Tt[wt].name; })) continue;
      this.attachedTo[i] = user;
      if (!this.attached.has(user)) this.attached.set(user, []);
      this.attached.get(user).push(i);
    }
    for (i = 0; i < L.length; i++) {
      var lg = L[i].group;
      if (this.attachedTo[i] >= 0) { for (x = lg; x >= 0 && gFirst[x] > i; x = G[x].parent) gFirst[x] = i; continue; }
      if (lg >= 0) kids[lg].push(i); else root.push(i);
      for (x = lg; x >= 0 && gFirst[x] > i; x = G[x].parent) gFirst[x] = i;
    }
    for (g = 0; g < G.length; g++) { var p = G[g].parent; if (p >= 0) kids[p].push(-(g + 1)); else root.push(-(g + 1)); }
    var first = function (c) { return c >= 0 ? c : gFirst[-c - 1]; };
    var byFirst = function (a, b) { return first(a) - first(b); };
    root.sort(byFirst);
    for (g = 0; g < G.length; g++) kids[g].sort(byFirst);
    this.kids = kids; this.root = root;
    /* runs of identical siblings (equal sig) */
    this.runLen = new Int32Array(G.length).fill(1);
    var lists = kids.concat([root]);
    for (var li = 0; li < lists.length; li++) {
      var ks = lists[li], s = 0;
      while (s < ks.length) {
        var e = s + 1;
        if (ks[s] < 0 && G[-ks[s] - 1].sig) {
          while (e < ks.length && ks[e] < 0 && G[-ks[e] - 1].sig === G[-ks[s] - 1].sig) e++;
          for (var k = s; k < e; k++) this.runLen[-ks[k] - 1] = e - s;
        }
        s = e;
      }
    }
    /* edges (producer -> consumer) filed under their lowest common container */
    var T = model.tensors || [];
    this.edges = new Map();
    var self = this;
    var depth = function (a) { return a < 0 ? 0 : gdepth[a]; };
    for (i = 0; i < L.length; i++) {
      var ins = L[i].in || [], seen = null;
      for (var j = 0; j < ins.length; j++) {
        var t = ins[j];
        if (t < 0 || !T[t] || T[t].producer == null || T[t].producer < 0) continue;
        var pr = T[t].producer;
        if (pr === i || self.attachedTo[pr] >= 0) continue;
        if (ins.length > 1) { seen = seen || new Set(); if (seen.has(pr)) continue; seen.add(pr); }
        var ra = pr, a = L[pr].group, rb = i, b = L[i].group;
        while (a !== b) {
          if (depth(a) >= depth(b)) { ra = -(a + 1); a = G[a].parent; } else { rb = -(b + 1); b = G[b].parent; }
        }
        var key = a < 0 ? 'r' : -(a + 1);
        var lst = self.edges.get(key);
        if (!lst) self.edges.set(key, lst = []);
        lst.push(ra, rb, pr, i);
      }
    }
    /* If/Loop/Scan bodies */
    for (i = 0; i < L.length; i++) {
      var bs = L[i].bodies;
      if (bs && bs.length) this.bodies.set(i, bs.map(function (b) { return new Scope(pane, b.model, { scope: self, layer: i }, b.attr); }));
    }
    /* diff marks and profile time per group */
    this.gDiff = new Uint8Array(G.length);
    this.gUs = prof && pane.index === 0 ? new Float64Array(G.length) : null;
    for (i = 0; i < L.length; i++) {
      var df = L[i].diff, us = this.layerUs(i);
      if ((df && df !== 'same') || us) {
        for (x = L[i].group; x >= 0; x = G[x].parent) {
          if (df && df !== 'same') this.gDiff[x] = 1;
          if (us && this.gUs) this.gUs[x] += us;
        }
      }
    }
    this.nameIdx = null;
    this.users = null;
  }
  Scope.prototype.layerUs = function (i) {
    if (!prof || !prof.layers || this.pane.index !== 0) return 0;
    var r = prof.layers[this.L[i].name];
    return r ? r.us || 0 : 0;
  };
  Scope.prototype.find = function (name) {
    if (!this.nameIdx) { this.nameIdx = new Map(); for (var i = 0; i < this.L.length; i++) this.nameIdx.set(this.L[i].name, i); }
    var r = this.nameIdx.get(name);
    return r === undefined ? -1 : r;
  };
  Scope.prototype.userList = function (t) {
    if (!this.users) {
      this.users = new Map();
      for (var i = 0; i < this.L.length; i++) {
        var ins = this.L[i].in || [];
        for (var j = 0; j < ins.length; j++) {
          if (ins[j] < 0) continue;
          var u = this.users.get(ins[j]);
          if (!u) this.users.set(ins[j], u = []);
          if (u[u.length - 1] !== i) u.push(i);
        }
      }
    }
    return this.users.get(t) || [];
  };
  Scope.prototype.childrenOf = function (key) { return key === 'r' ? this.root : this.kids[-key - 1]; };
  Scope.prototype.parentKey = function (code) {
    var g = code >= 0 ? this.L[code].group : this.G[-code - 1].parent;
    return g < 0 ? 'r' : -(g + 1);
  };
  /* the child of container key on the way down to code */
  Scope.prototype.childToward = function (key, code) {
    var prev = code, cur = code >= 0 ? this.L[code].group : this.G[-code - 1].parent;
    var stop = key === 'r' ? -1 : -key - 1;
    while (cur !== stop && cur >= 0) { prev = -(cur + 1); cur = this.G[cur].parent; }
    return prev;
  };
  /* what is drawn for layer code below container key: the first collapsed group on the way, or the layer */
  Scope.prototype.visibleBelow = function (key, code) {
    var c = this.childToward(key, code);
    while (c < 0 && this.gExp[-c - 1]) c = this.childToward(c, code);
    return c;
  };
  /* the outermost collapsed container holding layer i in the whole pane (for marks) */
  Scope.prototype.visibleOf = function (i) {
    var v = this.visibleBelow('r', i);
    var s = this, res = { scope: s, code: v };
    while (s.owner) {
      var o = s.owner;
      if (!o.scope.lExp[o.layer]) res = { scope: o.scope, code: o.layer };
      var ov = o.scope.visibleBelow('r', o.layer);
      if (ov !== o.layer) res = { scope: o.scope, code: ov };
      s = o.scope;
    }
    return res;
  };
  Scope.prototype.invalidate = function (code) {
    this.cache.delete(code);
    var g = code >= 0 ? this.L[code].group : this.G[-code - 1].parent;
    for (; g >= 0; g = this.G[g].parent) this.cache.delete(-(g + 1));
    this.cache.delete('r');
    if (this.owner) this.owner.scope.invalidate(this.owner.layer);
  };
  /* expand every group on the way to layer i (and the If/Loop/Scan layers holding its scope) */
  Scope.prototype.reveal = function (i) {
    var changed = false;
    for (var g = this.L[i].group; g >= 0; g = this.G[g].parent) if (!this.gExp[g]) { this.gExp[g] = 1; changed = true; }
    if (this.owner && !this.owner.scope.lExp[this.owner.layer]) { this.owner.scope.lExp[this.owner.layer] = 1; changed = true; }
    if (this.owner) changed = this.owner.scope.reveal(this.owner.layer) || changed;
    if (changed) this.invalidate(i);
    return changed;
  };
  Scope.prototype.setAll = function (v) {
    this.gExp.fill(v ? 1 : 0);
    this.lExp.fill(v ? 1 : 0);
    this.cache.clear();
    this.bodies.forEach(function (bs) { bs.forEach(function (b) { b.setAll(v); }); });
  };
  Scope.prototype.totalLayers = function () {
    var n = this.L.length;
    this.bodies.forEach(function (bs) { bs.forEach(function (b) { n += b.totalLayers(); }); });
    return n;
  };

  /* ---------- sizes and nested layout ---------- */
  var NODE_H = 50, WEIGHT_H = 36, ATT_H = 14, GROUP_H = 54, HEAD = 22, PAD = 8;
  function textW(n) { return Math.ceil(n * CH) + 16; }
  function clampW(w) { return Math.max(70, Math.min(w, 300)); }
  Scope.prototype.outShape = function (i) {
    var o = this.L[i].out || [], t = o.length ? (this.m.tensors || [])[o[0]] : null;
    return t ? typeText(t) + (o.length > 1 ? ' +' + (o.length - 1) : '') : '';
  };
  /* a weight or constant (gwr imports each initializer as a Constant layer): drawn small */
  Scope.prototype.isWeight = function (i) {
    var l = this.L[i], o = l.out || [], t = o.length ? (this.m.tensors || [])[o[0]] : null;
    return l.op === 'Constant' && !(l.in || []).length && !!t && (t.kind === 'weight' || t.kind === 'const');
  };
  Scope.prototype.groupLabel = function (g) {
    var G = this.G[g], n = this.runLen[g];
    return { name: G.name, count: G.layers + ' layers', rep: n > 1 ? 'x' + n + ' identical (' + (G.repeat || 1) + '/' + n + ')' : '' };
  };
  Scope.prototype.size = function (code) {
    if (code >= 0) {
      if (this.bodies.has(code) && this.lExp[code]) { var lb = this.layout(code); return { w: lb.w, h: lb.h }; }
      var l = this.L[code];
      if (this.isWeight(code)) return { w: clampW(textW(Math.max(l.name.length, this.outShape(code).length))), h: WEIGHT_H };
      var wl = this.attached.get(code) || [], n = Math.max((l.op || '').length + 2, l.name.length, this.outShape(code).length), self = this;
      wl.forEach(function (w) { n = Math.max(n, self.L[w].name.length + self.outShape(w).length + 1); });
      return { w: clampW(textW(n)), h: NODE_H + ATT_H * wl.length };
    }
    var g = -code - 1;
    if (this.gExp[g]) { var lg = this.layout(code); return { w: lg.w, h: lg.h }; }
    var lab = this.groupLabel(g);
    return { w: clampW(textW(Math.max(lab.name.length, lab.count.length, lab.rep.length))), h: GROUP_H };
  };
  /* layout of one expanded container: {w, h, at: Map code -> {x, y, w, h} (top-left, relative),
   * pts: Map "a b" -> points, bodies: [{scope, x, y, w, h}]} */
  Scope.prototype.layout = function (key) {
    var c = this.cache.get(key);
    if (c) return c;
    var top = key === 'r' ? 0 : HEAD;
    if (key !== 'r' && key >= 0) {            /* an If/Loop/Scan layer: its bodies side by side */
      var x = PAD, h = 0, bl = [];
      this.bodies.get(key).forEach(function (b) {
        var r = b.layout('r');
        bl.push({ scope: b, x: x, y: HEAD + 14, w: r.w, h: r.h + 16 });
        x += r.w + PAD; h = Math.max(h, r.h + 16);
      });
      var l = this.L[key];
      c = { w: Math.max(x, textW((l.op + ' ' + l.name).length + 2)), h: HEAD + 14 + h + PAD, at: new Map(), pts: new Map(), bodies: bl };
      this.cache.set(key, c);
      return c;
    }
    var kids = this.childrenOf(key), at = new Map(), pts = new Map();
    if (kids.length === 0) { c = { w: 80, h: top + 20, at: at, pts: pts }; this.cache.set(key, c); return c; }
    var gr = new dagre.graphlib.Graph({ multigraph: false });
    gr.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 26, edgesep: 8, marginx: PAD, marginy: PAD });
    gr.setDefaultEdgeLabel(function () { return {}; });
    for (var k = 0; k < kids.length; k++) { var s = this.size(kids[k]); gr.setNode(String(kids[k]), { width: s.w, height: s.h }); }
    var es = this.edges.get(key) || [];
    var linked = new Set();
    for (k = 0; k < es.length; k += 4) { gr.setEdge(String(es[k]), String(es[k + 1])); linked.add(es[k]); linked.add(es[k + 1]); }
    /* a child with no edge inside the container (its producers and users are elsewhere) follows
     * its predecessor in topological order (an invisible edge), so that such children do not
     * all line up in the first rank */
    for (k = 1; k < kids.length; k++) {
      if (!linked.has(kids[k]) && !gr.hasEdge(String(kids[k - 1]), String(kids[k]))) gr.setEdge(String(kids[k - 1]), String(kids[k]), { weight: 0, minlen: 1 });
    }
    dagre.layout(gr);
    var gg = gr.graph(), w = gg.width || 0, hh = gg.height || 0;
    gr.nodes().forEach(function (n) { var v = gr.node(n); at.set(+n, { x: v.x - v.width / 2, y: v.y - v.height / 2 + top, w: v.width, h: v.height }); });
    gr.edges().forEach(function (e) {
      var p = gr.edge(e).points;
      if (p) pts.set(e.v + ' ' + e.w, p.map(function (q) { return { x: q.x, y: q.y + top }; }));
    });
    if (key !== 'r') w = Math.max(w, textW(this.G[-key - 1].name.length + 12));
    c = { w: w, h: hh + top, at: at, pts: pts };
    this.cache.set(key, c);
    return c;
  };

  /* ---------- panes ---------- */
  var panes = [];
  function Pane(index, model, title) {
    this.index = index;
    this.scopes = [];
    this.z = 1;
    this.marks = { match: new Set(), hl: new Set() };   /* "scopeId:layer" */
    this.sel = null;
    var wrap = document.createElement('div');
    wrap.className = 'gwr-pane-wrap';
    wrap.innerHTML = '<div class="gwr-pane-head"></div><div class="gwr-pane"><div class="gwr-sizer"><div class="gwr-world"></div></div></div>';
    this.wrap = wrap;
    this.head = wrap.firstChild;
    this.el = wrap.lastChild;
    this.sizer = this.el.firstChild;
    this.world = this.sizer.firstChild;
    this.top = new Scope(this, model, null, title);
    this.head.textContent = title;
    $('panes').appendChild(wrap);
    this.bind();
  }
  Pane.prototype.modelAttr = function (scope, i) {
    if (this.overlay) return scope.L[i].diff === 'removed' ? '0' : '1';
    return String(this.index);
  };
  Pane.prototype.render = function () {
    var html = [], paths = [], self = this;
    var rootL = this.top.layout('r');
    this.rendered = [];
    this.scopes.forEach(function (s) { s.pos.clear(); });
    this.place(this.top, 'r', 0, 0, html);
    /* edges of every rendered container */
    this.rendered.forEach(function (rc) {
      var s = rc.scope, es = s.edges.get(rc.key) || [], lay = s.layout(rc.key), done = new Set();
      for (var k = 0; k < es.length; k += 4) {
        var a = s.visibleBelow(rc.key, es[k + 2]), b = s.visibleBelow(rc.key, es[k + 3]);
        if (a === b) continue;
        var id = a + ' ' + b;
        if (done.has(id)) continue;
        done.add(id);
        var pa = s.pos.get(a), pb = s.pos.get(b);
        if (!pa || !pb) continue;
        if (a === es[k] && b === es[k + 1] && lay.pts.has(id)) {
          var pts = lay.pts.get(id), d = 'M' + (pts[0].x + rc.x).toFixed(1) + ',' + (pts[0].y + rc.y).toFixed(1);
          for (var q = 1; q < pts.length; q++) d += 'L' + (pts[q].x + rc.x).toFixed(1) + ',' + (pts[q].y + rc.y).toFixed(1);
          paths.push('<path d="' + d + '"/>');
        } else {
          var x1 = pa.x + pa.w / 2, y1 = pa.y + pa.h, x2 = pb.x + pb.w / 2, y2 = pb.y, my = (y1 + y2) / 2;
          paths.push('<path class="x" d="M' + x1.toFixed(1) + ',' + y1.toFixed(1) + 'C' + x1.toFixed(1) + ',' + my.toFixed(1) + ' ' + x2.toFixed(1) + ',' + my.toFixed(1) + ' ' + x2.toFixed(1) + ',' + y2.toFixed(1) + '"/>');
        }
      }
    });
    this.W = rootL.w; this.H = rootL.h;
    this.world.innerHTML = '<svg width="' + Math.ceil(rootL.w) + '" height="' + Math.ceil(rootL.h) + '">' + paths.join('') + '</svg>' + html.join('');
    this.world.style.width = Math.ceil(rootL.w) + 'px';
    this.world.style.height = Math.ceil(rootL.h) + 'px';
    this.applyZoom();
    this.items = this.world.querySelectorAll('[data-k]');
  };
  /* absolute placement of container key of scope s whose top-left is (ox, oy) */
  Pane.prototype.place = function (s, key, ox, oy, html) {
    var lay = s.layout(key), self = this;
    if (key !== 'r' && key >= 0) {
      lay.bodies.forEach(function (b) {
        html.push('<div class="gwr-body" style="left:' + (ox + b.x) + 'px;top:' + (oy + b.y) + 'px;width:' + b.w + 'px;height:' + b.h + 'px"><span class="gwr-bhead">' + esc(b.scope.title) + '</span></div>');
        self.place(b.scope, 'r', ox + b.x, oy + b.y + 16, html);
      });
      return;
    }
    this.rendered.push({ scope: s, key: key, x: ox, y: oy });
    lay.at.forEach(function (r, code) {
      var x = ox + r.x, y = oy + r.y;
      s.pos.set(code, { x: x, y: y, w: r.w, h: r.h });
      var st = 'left:' + x.toFixed(1) + 'px;top:' + y.toFixed(1) + 'px;width:' + r.w.toFixed(1) + 'px;height:' + r.h.toFixed(1) + 'px';
      var dk = s.id + ':' + code;
      if (code >= 0) {
        var l = s.L[code], cls = 'gwr-node';
        if (l.diff && l.diff !== 'same') cls += ' gwr-' + l.diff;
        if (self.marks.match.has(dk)) cls += ' gwr-match';
        if (self.marks.hl.has(dk)) cls += ' gwr-hl';
        if (self.sel === dk) cls += ' gwr-sel';
        var open = s.bodies.has(code) && s.lExp[code];
        if (s.bodies.has(code)) cls += open ? ' gwr-body-open' : ' gwr-has-body';
        var us = s.layerUs(code);
        if (us && !open) st += ';background:' + heat(us);
        var attrs = ' data-k="' + dk + '" data-name="' + esc(l.name) + '" data-model="' + self.modelAttr(s, code) + '"' + (s.owner ? ' data-body="1"' : '') + (us ? ' data-us="' + us + '"' : '');
        if (open) {
          html.push('<div class="' + cls + '"' + attrs + ' style="' + st + '"><div class="gwr-ghead"><b>' + esc(l.op) + '</b> ' + esc(l.name) + ' (bodies)</div></div>');
          self.place(s, code, x, y, html);
        } else if (s.isWeight(code)) {
          html.push('<div class="' + cls + ' gwr-weight"' + attrs + ' style="' + st + '" title="' + esc(l.op + ' ' + l.name) + '"><span>' + esc(l.name) + '</span><i>' + esc(s.outShape(code)) + '</i></div>');
        } else {
          html.push('<div class="' + cls + '"' + attrs + ' style="' + st + '" title="' + esc(l.name) + '"><b>' + esc(l.op) + (s.bodies.has(code) ? ' +' : '') + '</b><span>' + esc(l.name) + '</span><i>' + esc(s.outShape(code)) + '</i>');
          (s.attached.get(code) || []).forEach(function (w) {
            var wl = s.L[w], wk = s.id + ':' + w, wc = 'gwr-node gwr-weight gwr-attached';
            if (wl.diff && wl.diff !== 'same') wc += ' gwr-' + wl.diff;
            if (self.marks.match.has(wk)) wc += ' gwr-match';
            if (self.marks.hl.has(wk)) wc += ' gwr-hl';
            if (self.sel === wk) wc += ' gwr-sel';
            var wus = s.layerUs(w);
            s.pos.set(w, { x: x, y: y, w: r.w, h: r.h });
            html.push('<div class="' + wc + '" data-k="' + wk + '" data-name="' + esc(wl.name) + '" data-model="' + self.modelAttr(s, w) + '"' + (s.owner ? ' data-body="1"' : '') + (wus ? ' data-us="' + wus + '" style="background:' + heat(wus) + '"' : '') + '><span>' + esc(wl.name) + '</span> <i>' + esc(s.outShape(w)) + '</i></div>');
          });
          html.push('</div>');
        }
      } else {
        var g = -code - 1, G = s.G[g], gc = 'gwr-group' + (s.gExp[g] ? '' : ' collapsed') + (s.gDiff[g] ? ' gwr-has-diff' : '');
        if (self.marks.match.has(dk)) gc += ' gwr-match';
        if (self.marks.hl.has(dk)) gc += ' gwr-hl';
        var gus = s.gUs && s.gUs[g];
        if (gus && !s.gExp[g]) st += ';background:' + heat(gus);
        var ga = ' data-k="' + dk + '" data-group="' + esc(G.name) + '" data-model="' + self.index + '"';
        if (s.gExp[g]) {
          html.push('<div class="' + gc + '"' + ga + ' style="' + st + '"><div class="gwr-ghead">&#9662; ' + esc(G.name) + ' &middot; ' + G.layers + ' layers</div></div>');
          self.place(s, code, x, y, html);
        } else {
          var lab = s.groupLabel(g);
          html.push('<div class="' + gc + '"' + ga + ' style="' + st + '" title="' + esc(G.name) + '"><b>&#9656; ' + esc(lab.name) + '</b>' + esc(lab.count) + (lab.rep ? '<br><span class="gwr-rep">' + esc(lab.rep) + '</span>' : '') + '</div>');
        }
      }
    });
  };
  Pane.prototype.applyZoom = function () {
    this.world.style.transform = 'scale(' + this.z + ')';
    this.sizer.style.width = Math.ceil((this.W || 0) * this.z) + 'px';
    this.sizer.style.height = Math.ceil((this.H || 0) * this.z) + 'px';
  };
  Pane.prototype.fitZoom = function () {
    var w = this.el.clientWidth || 800;
    this.z = Math.max(0.4, Math.min(1, (w - 10) / Math.max(1, this.W)));
    this.applyZoom();
    this.el.scrollLeft = Math.max(0, (this.W * this.z - w) / 2);
    this.el.scrollTop = 0;
  };
  Pane.prototype.centerOn = function (s, code) {
    var p = s.pos.get(code);
    if (!p) return;
    if (this.z < 0.75) { this.z = 1; this.applyZoom(); }   /* readable where it lands */
    this.el.scrollLeft = Math.max(0, (p.x + p.w / 2) * this.z - this.el.clientWidth / 2);
    this.el.scrollTop = Math.max(0, (p.y + p.h / 2) * this.z - this.el.clientHeight / 2);
  };
  Pane.prototype.itemOf = function (el) {
    while (el && el !== this.world) {
      if (el.dataset && el.dataset.k) {
        var p = el.dataset.k.split(':');
        return { el: el, scope: this.scopes[+p[0]], code: +p[1] };
      }
      el = el.parentNode;
    }
    return null;
  };
  Pane.prototype.bind = function () {
    var self = this, el = this.el, drag = null;
    el.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, sl: el.scrollLeft, st: el.scrollTop, moved: false };
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) > 4) { drag.moved = true; el.classList.add('dragging'); }
      if (drag.moved) { el.scrollLeft = drag.sl - dx; el.scrollTop = drag.st - dy; }
    });
    window.addEventListener('mouseup', function () {
      if (drag && drag.moved) { self.justDragged = true; setTimeout(function () { self.justDragged = false; }, 0); }
      drag = null; el.classList.remove('dragging');
    });
    el.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var r = el.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
      var cx = (el.scrollLeft + mx) / self.z, cy = (el.scrollTop + my) / self.z;
      self.z = Math.max(0.02, Math.min(4, self.z * Math.exp(-ev.deltaY * 0.0015)));
      self.applyZoom();
      el.scrollLeft = cx * self.z - mx; el.scrollTop = cy * self.z - my;
    }, { passive: false });
    el.addEventListener('click', function (ev) {
      if (self.justDragged) return;
      var it = self.itemOf(ev.target);
      if (!it) return;
      var s = it.scope, code = it.code;
      if (code < 0) { toggleGroup(self, s, code); return; }
      if (s.bodies.has(code) && (ev.target.closest('.gwr-ghead') || (!s.lExp[code] && ev.detail === 2))) { toggleLayer(self, s, code); return; }
      select(self, s, code);
    });
    el.addEventListener('dblclick', function (ev) {
      var it = self.itemOf(ev.target);
      if (it && it.code >= 0 && it.scope.bodies.has(it.code) && !it.scope.lExp[it.code]) toggleLayer(self, it.scope, it.code);
    });
  };
  function keepView(pane, s, code, fn) {
    var before = s.pos.get(code), sl = pane.el.scrollLeft, st = pane.el.scrollTop;
    fn();
    pane.render();
    var after = s.pos.get(code);
    if (before && after) {
      pane.el.scrollLeft = sl + (after.x - before.x) * pane.z;
      pane.el.scrollTop = st + (after.y - before.y) * pane.z;
    }
  }
  function toggleGroup(pane, s, code) {
    var g = -code - 1;
    keepView(pane, s, code, function () { s.gExp[g] = s.gExp[g] ? 0 : 1; s.invalidate(code); });
  }
  function toggleLayer(pane, s, code) {
    keepView(pane, s, code, function () { s.lExp[code] = s.lExp[code] ? 0 : 1; s.invalidate(code); });
  }

  /* ---------- details ---------- */
  function provTree(node) {
    if (typeof node === 'string') return '<li>' + esc(node) + ' <span class="gwr-hint">(original layer)</span></li>';
    var h = '<li>' + (node.name ? esc(node.name) + ' ' : '') + 'made by <b>' + esc(node.rule) + '</b> from<ul class="gwr-prov">';
    (node.from || []).forEach(function (f) { h += provTree(f); });
    if (node.more) h += '<li class="gwr-hint">' + node.more + ' more</li>';
    return h + '</ul></li>';
  }
  function layerLink(s, i, pane) {
    return '<a data-goto="' + pane.index + ':' + s.id + ':' + i + '">' + esc(s.L[i].name) + '</a>';
  }
  function select(pane, s, i) {
    var l = s.L[i], T = s.m.tensors || [], h = [];
    var prevSel = pane.sel;
    pane.sel = s.id + ':' + i;
    panes.forEach(function (p) { if (p !== pane) p.sel = null; });
    var old = document.querySelectorAll('.gwr-sel');
    for (var k = 0; k < old.length; k++) old[k].classList.remove('gwr-sel');
    var me = pane.world.querySelector('[data-k="' + pane.sel + '"]');
    if (me) me.classList.add('gwr-sel');
    h.push('<h3 class="gwr-title">' + esc(l.name) + '</h3>');
    h.push('<div><b>' + esc(l.op) + '</b>' + (l.domain ? ' (' + esc(l.domain) + ')' : '') + ' &middot; model ' + esc(s.pane.top.title) + (s.owner ? ' &middot; in ' + esc(s.title) + ' of ' + esc(s.owner.scope.L[s.owner.layer].name) : '') + '</div>');
    if (l.diff) {
      h.push('<div>diff: <b class="gwr-d-' + esc(l.diff) + '">' + esc(l.diff) + '</b>' + (l.why ? ' (' + esc(l.why) + ')' : ''));
      var other = panes.filter(function (p) { return !p.overlay && p !== pane; })[0];
      if (other && l.match != null && l.match >= 0 && !s.owner) h.push(' &middot; matches ' + layerLink(other.top, l.match, other));
      h.push('</div>');
    }
    h.push('<table>');
    h.push('<tr><td class="gwr-k">params</td><td>' + fmtNum(l.params) + '</td></tr>');
    h.push('<tr><td class="gwr-k">FLOPs</td><td>' + fmtNum(l.flops) + '</td></tr>');
    var us = s.layerUs(i);
    if (us) h.push('<tr><td class="gwr-k">time</td><td>' + fmtUs(us) + ' in ' + prof.layers[l.name].calls + ' calls</td></tr>');
    h.push('</table><h3>Attributes</h3><table>');
    var an = Object.keys(l.attrs || {});
    if (!an.length) h.push('<tr><td class="gwr-hint">none</td></tr>');
    an.forEach(function (k) { h.push('<tr><td class="gwr-k">' + esc(k) + '</td><td>' + esc(l.attrs[k]) + '</td></tr>'); });
    h.push('</table><h3>Inputs</h3><table>');
    (l.in || []).forEach(function (t, j) {
      if (t < 0) { h.push('<tr><td class="gwr-k">' + j + '</td><td class="gwr-hint">(absent)</td></tr>'); return; }
      var tt = T[t] || {}, from = tt.producer != null && tt.producer >= 0 ? 'from ' + layerLink(s, tt.producer, pane) : '(' + esc(tt.kind || '') + ')';
      h.push('<tr><td class="gwr-k">' + j + '</td><td>' + esc(tt.name) + ' <i>' + esc(typeText(tt)) + '</i> ' + from + '</td></tr>');
    });
    h.push('</table><h3>Outputs</h3><table>');
    (l.out || []).forEach(function (t, j) {
      var tt = T[t] || {};
      h.push('<tr><td class="gwr-k">' + j + '</td><td>' + esc(tt.name) + ' <i>' + esc(typeText(tt)) + '</i></td></tr>');
    });
    h.push('</table><h3>Users</h3>');
    var users = [];
    (l.out || []).forEach(function (t) { s.userList(t).forEach(function (u) { if (users.indexOf(u) < 0) users.push(u); }); });
    var outs = (s.m.outputs || []).map(function (o) { return o.name; });
    (l.out || []).forEach(function (t) { if (T[t] && outs.indexOf(T[t].name) >= 0) users.push(-1); });
    h.push(users.length ? '<div>' + users.map(function (u) { return u < 0 ? '(graph output)' : layerLink(s, u, pane); }).join(', ') + '</div>' : '<div class="gwr-hint">none</div>');
    h.push('<h3>Provenance</h3>');
    if (l.prov) {
      var pj = null;
      try { pj = JSON.parse(l.prov); } catch (e) { pj = null; }
      h.push(pj ? '<ul class="gwr-prov">' + provTree(pj) + '</ul>' : '<pre>' + esc(l.prov) + '</pre>');
    } else h.push('<div class="gwr-hint">an original layer (no provenance recorded)</div>');
    $('details').innerHTML = h.join('');
    return prevSel;
  }
  $('details').addEventListener('click', function (ev) {
    var a = ev.target.closest('a[data-goto]');
    if (!a) return;
    var p = a.getAttribute('data-goto').split(':'), pane = panes[+p[0]], s = pane.scopes[+p[1]], i = +p[2];
    goTo(pane, s, i);
    select(pane, s, i);
  });
  function goTo(pane, s, i) {
    if (s.reveal(i)) pane.render();
    var v = s.visibleOf(i);
    v.scope === s && v.code === i ? pane.centerOn(s, i) : pane.centerOn(v.scope, v.code);
  }

  /* ---------- marks: search and trace ---------- */
  function setMarks(pane, kind, list) {        /* list: [{scope, i}] */
    var set = new Set();
    list.forEach(function (m) {
      set.add(m.scope.id + ':' + m.i);
      var v = m.scope.visibleOf(m.i);
      set.add(v.scope.id + ':' + v.code);
    });
    pane.marks[kind] = set;
  }
  function remark(pane, kind) {                /* recompute collapsed-group marks after a reveal */
    var list = [];
    pane.marks[kind].forEach(function (k) { var p = k.split(':'); if (+p[1] >= 0) list.push({ scope: pane.scopes[+p[0]], i: +p[1] }); });
    setMarks(pane, kind, list);
  }
  var searchState = { q: null, hits: [], at: 0 };
  function visiblePanes() { return panes.filter(function (p) { return p.wrap.style.display !== 'none'; }); }
  function runSearch(next) {
    var q = $('search').value.trim().toLowerCase();
    if (q === searchState.q && next && searchState.hits.length) {
      searchState.at = (searchState.at + 1) % searchState.hits.length;
      var h = searchState.hits[searchState.at];
      goTo(h.pane, h.scope, h.i); remark(h.pane, 'match'); h.pane.render(); goTo(h.pane, h.scope, h.i);
      $('search-info').textContent = (searchState.at + 1) + ' of ' + searchState.hits.length;
      return;
    }
    searchState = { q: q, hits: [], at: 0 };
    visiblePanes().forEach(function (pane) {
      var found = [];
      if (q) pane.scopes.forEach(function (s) {
        for (var i = 0; i < s.L.length; i++) {
          var l = s.L[i];
          if (l.name.toLowerCase().indexOf(q) >= 0 || (l.op || '').toLowerCase().indexOf(q) >= 0) found.push({ scope: s, i: i });
        }
      });
      var changed = false;
      found.slice(0, q ? 1 : 0).forEach(function (m) { changed = m.scope.reveal(m.i) || changed; });
      setMarks(pane, 'match', found);
      pane.render();
      found.forEach(function (m) { searchState.hits.push({ pane: pane, scope: m.scope, i: m.i }); });
      if (found.length) pane.centerOn(found[0].scope, found[0].i);
    });
    $('search-info').textContent = q ? searchState.hits.length + ' match' + (searchState.hits.length === 1 ? '' : 'es') : '';
  }
  var searchTimer = null;
  $('search').addEventListener('input', function () { clearTimeout(searchTimer); searchTimer = setTimeout(function () { runSearch(false); }, 120); });
  $('search').addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter') { clearTimeout(searchTimer); runSearch(searchState.q === $('search').value.trim().toLowerCase()); }
  });

  function showRewrite(seq) {
    var r = (data.trace || []).filter(function (t) { return t.seq === seq; })[0];
    if (!r) return;
    var lis = document.querySelectorAll('#trace-list li');
    for (var k = 0; k < lis.length; k++) lis[k].classList.toggle('on', +lis[k].getAttribute('data-seq') === seq);
    visiblePanes().forEach(function (pane) {
      var names = pane.overlay ? (r.removed || []).concat(r.added || []) : pane.index === 0 ? (r.removed || []) : (r.added || []);
      if (panes.length === 1) names = (r.removed || []).concat(r.added || []);
      var list = [];
      names.forEach(function (n) { var i = pane.top.find(n); if (i >= 0) list.push({ scope: pane.top, i: i }); });
      list.forEach(function (m) { m.scope.reveal(m.i); });
      setMarks(pane, 'hl', list);
      pane.render();
      if (list.length) pane.centerOn(list[0].scope, list[0].i);
    });
  }

  /* ---------- overlay: model 1 with model 0's removed layers put back ---------- */
  function overlayModel(a, b) {
    var T = (b.tensors || []).slice(), L = b.layers.slice(), G = b.groups || [];
    var tName = new Map(), gName = new Map();
    T.forEach(function (t, i) { tName.set(t.name, i); });
    G.forEach(function (g, i) { gName.set(g.name, i); });
    var removed = [], newIdx = new Map();
    a.layers.forEach(function (l, i) { if (l.diff === 'removed') { newIdx.set(i, L.length + removed.length); removed.push(i); } });
    var aT = a.tensors || [], aG = a.groups || [];
    function mapT(t) {
      if (t < 0) return t;
      var at = aT[t], p = at.producer;
      if (p != null && p >= 0 && newIdx.has(p)) {
        var key = '\u0000' + at.name;
        if (!tName.has(key)) { tName.set(key, T.length); T.push({ name: at.name, dtype: at.dtype, shape: at.shape, producer: newIdx.get(p), kind: at.kind }); }
        return tName.get(key);
      }
      if (tName.has(at.name)) return tName.get(at.name);
      tName.set(at.name, T.length);
      T.push({ name: at.name, dtype: at.dtype, shape: at.shape, producer: p != null && p >= 0 && a.layers[p].match >= 0 ? a.layers[p].match : -1, kind: at.kind });
      return T.length - 1;
    }
    removed.forEach(function (i) { var l = a.layers[i]; l.out.forEach(function (t) { mapT(t); }); });
    removed.forEach(function (i) {
      var l = a.layers[i], g = l.group >= 0 && gName.has(aG[l.group].name) ? gName.get(aG[l.group].name) : -1;
      var c = {}; for (var k in l) c[k] = l[k];
      c.in = l.in.map(mapT); c.out = l.out.map(mapT); c.group = g; c.bodies = null;
      L.push(c);
    });
    var G2 = G.map(function (g) { var c = {}; for (var k in g) c[k] = g[k]; return c; });
    L.slice(b.layers.length).forEach(function (l) { for (var g = l.group; g >= 0; g = G2[g].parent) G2[g].layers++; });
    return { file: b.file, graph: b.graph, inputs: b.inputs, outputs: b.outputs, tensors: T, layers: L, groups: G2 };
  }
  var overlayPane = null;
  function setOverlay(on) {
    if (on && !overlayPane) {
      overlayPane = new Pane(panes.length, overlayModel(models[0], models[1]), 'overlay: ' + (models[1].file || 'model 1') + ' with the removed layers of ' + (models[0].file || 'model 0'));
      overlayPane.overlay = true;
      panes.push(overlayPane);
      initialExpand(overlayPane);
      var fresh = true;
    }
    panes.forEach(function (p) { p.wrap.style.display = (p === overlayPane) === on ? '' : 'none'; });
    if (fresh) { overlayPane.render(); overlayPane.fitZoom(); }   /* sized once the other panes are hidden */
    $('overlay').classList.toggle('on', on);
  }

  /* ---------- side panels ---------- */
  function buildTrace() {
    if (!data.trace || !data.trace.length) return;
    $('trace').hidden = false;
    var h = [];
    data.trace.forEach(function (r) {
      h.push('<li data-seq="' + r.seq + '"><b>' + esc(r.label) + '</b> at ' + esc(r.root) + ' (' + esc(r.op) + '): ' +
        (r.added || []).map(function (n) { return '+' + esc(n); }).join(' ') + ' ' + (r.removed || []).map(function (n) { return '-' + esc(n); }).join(' ') + '</li>');
    });
    $('trace-list').innerHTML = h.join('');
    $('trace-list').addEventListener('click', function (ev) {
      var li = ev.target.closest('li[data-seq]');
      if (li) showRewrite(+li.getAttribute('data-seq'));
    });
  }
  function buildProfile() {
    if (!prof) return;
    $('profile').hidden = false;
    var h = [];
    if (prof.layers && profMax > 0) {
      h.push('<div>time per layer (' + (prof.kind || 'run') + ', square-root scale, total over all calls)</div><div class="gwr-scale"></div><div class="gwr-ends"><span>0</span><span>' + fmtUs(profMax) + '</span></div>');
      var top = Object.keys(prof.layers).sort(function (x, y) { return prof.layers[y].us - prof.layers[x].us; }).slice(0, 10);
      var tl = top.map(function (n) {
        var i = panes[0].top.find(n);
        return '<li>' + (i >= 0 ? layerLink(panes[0].top, i, panes[0]) : esc(n)) + ' ' + fmtUs(prof.layers[n].us) + '</li>';
      });
      $('top-layers').innerHTML = tl.join('');
    }
    $('legend').innerHTML = h.join('');
    if (prof.passes && prof.passes.length) {
      var r = ['<tr><th>pass</th><th>round</th><th>time</th><th>rewrites</th><th>layers</th></tr>'];
      prof.passes.forEach(function (p) {
        r.push('<tr><td>' + esc(p.name) + '</td><td class="n">' + p.round + '</td><td class="n">' + fmtUs(p.us || 0) + '</td><td class="n">' + p.rewrites + '</td><td class="n">' +
          p.layers_before + ' &rarr; ' + p.layers_after + ' (' + (p.layers_after - p.layers_before) + ')</td></tr>');
      });
      $('passes').innerHTML = r.join('');
    }
  }
  $('top-layers').addEventListener('click', function (ev) {
    var a = ev.target.closest('a[data-goto]');
    if (!a) return;
    var p = a.getAttribute('data-goto').split(':'), pane = panes[+p[0]], s = pane.scopes[+p[1]];
    goTo(pane, s, +p[2]); select(pane, s, +p[2]);
  });

  function initialExpand(pane) { pane.top.setAll(pane.top.totalLayers() <= EXPAND_LIMIT); }

  /* ---------- start ---------- */
  $('title').textContent = data.title || (models[0] && models[0].file) || 'gwr view';
  document.title = 'gwr view: ' + $('title').textContent;
  models.forEach(function (m, k) { panes.push(new Pane(k, m, (m.file || 'model ' + k) + (m.graph ? ' (' + m.graph + ')' : ''))); });
  panes.forEach(function (p) {
    initialExpand(p);
    var s = p.top, n = s.L.length, c = { added: 0, removed: 0, changed: 0 };
    s.L.forEach(function (l) { if (c[l.diff] != null) c[l.diff]++; });
    p.head.textContent += ': ' + n + ' layers' + (models.length > 1 ? ', ' + (p.index === 0 ? c.removed + ' removed' : c.added + ' added') + ', ' + c.changed + ' changed' : '');
  });
  timing.prepare = performance.now() - T0 - timing.parse;
  buildTrace();
  buildProfile();
  if (models.length > 1) {
    $('overlay').hidden = false;
    $('overlay').addEventListener('click', function () { setOverlay(!(overlayPane && overlayPane.wrap.style.display !== 'none')); });
  }
  $('expand-all').addEventListener('click', function () {
    var n = 0;
    visiblePanes().forEach(function (p) { n += p.top.totalLayers(); });
    /* dagre takes 1-2 ms a layer: ask before a layout of minutes */
    if (n > EXPAND_LIMIT && !window.confirm('Expand all ' + n + ' layers? The layout takes about ' + Math.ceil(n * 1.5 / 1000) + ' s.')) return;
    visiblePanes().forEach(function (p) { p.top.setAll(true); p.render(); });
  });
  $('collapse-all').addEventListener('click', function () { visiblePanes().forEach(function (p) { p.top.setAll(false); p.render(); }); });
  var tl = performance.now();
  panes.forEach(function (p) { p.top.layout('r'); });
  timing.layout = performance.now() - tl;
  panes.forEach(function (p) { p.render(); p.fitZoom(); });
  timing.dom = performance.now() - tl - timing.layout;
  var st = $('status');
  st.textContent = (models[0] ? models[0].layers.length : 0) + ' layers';
  requestAnimationFrame(function () {
    requestAnimationFrame(function () {
      st.setAttribute('data-ms', String(Math.round(performance.now())));
      st.setAttribute('data-script-ms', String(Math.round(performance.now() - T0)));
      st.setAttribute('data-rendered', '1');
    });
  });
  window.gwrView = { timing: timing, panes: panes, data: data, search: runSearch, showRewrite: showRewrite, setOverlay: setOverlay };
})();
