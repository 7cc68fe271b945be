// bothy console: the live parts of the pages. Every page works without it.
//
// On a thread of the chat view it connects to the gateway like any other client (the upgrade
// carries the session cookie, and an identify without a token identifies with it), focuses the
// thread and keeps it live: a message, a reaction or a run that changes is fetched again as the
// server renders it (/console/messages/{id}/fragment, /console/runs/{id}/fragment), so the
// Markdown stays in Go; run.updated patches are applied to the card as text. The composer and
// the reaction and cancel forms post with fetch and put the answer in place.
"use strict";
(function () {
  var thread = document.querySelector('[data-testid="thread"]');
  if (!thread) return;
  var threadID = thread.dataset.threadId;
  var list = thread.querySelector('[data-testid="messages"]');
  var latest = thread.hasAttribute("data-latest");

  function $(el, id) { return el.querySelector('[data-testid="' + id + '"]'); }

  // send posts or gets a console address as the script does: the answer is the fragment of what
  // changed, or the reason it was refused, as text.
  function send(url, body) {
    var opts = { credentials: "same-origin", headers: { "Bothy-Fragment": "1" } };
    if (body) { opts.method = "POST"; opts.body = body; }
    return fetch(url, opts).then(function (r) {
      return r.text().then(function (t) {
        if (!r.ok || r.redirected) throw new Error(r.ok ? "Sign in again." : (r.headers.get("Content-Type") || "").indexOf("text/plain") === 0 ? t : "That did not work.");
        return t;
      });
    });
  }
  function parse(html) {
    var t = document.createElement("template");
    t.innerHTML = html.trim();
    return t.content.firstElementChild;
  }
  function nearBottom() { return window.innerHeight + window.scrollY >= document.body.scrollHeight - 120; }

  // put replaces a message or run card, or places a new one: a run after its message (and the
  // runs already there), anything else at the end, on the newest page only.
  function put(el) {
    if (!el || !el.id) return;
    var old = document.getElementById(el.id);
    if (old) { old.replaceWith(el); return; }
    if (!latest) return;
    var follow = nearBottom(), at = el.dataset.trigger && document.getElementById("m-" + el.dataset.trigger);
    if (at) {
      while (at.nextElementSibling && at.nextElementSibling.classList.contains("run")) at = at.nextElementSibling;
      at.after(el);
    } else {
      list.appendChild(el);
    }
    if (follow) el.scrollIntoView({ block: "end" });
  }
  function load(kind, id) {
    if (id) send("/console/" + kind + "/" + id + "/fragment").then(function (h) { put(parse(h)); }, function () {});
  }

  // Run updates (docs/gateway.md): a patch applies on its base version, a whole document
  // replaces, an old frame is dropped, and a gap reads the card again.
  function applyRun(d) {
    var card = document.getElementById("r-" + d.run_id);
    if (!card) { load("runs", d.run_id); return; }
    var have = +card.dataset.version;
    if (d.version <= have) return;
    if (d.document) fill(card, d.document, true);
    else if (d.patch && d.base_version === have) fill(card, d.patch, false);
    else { load("runs", d.run_id); return; }
    card.dataset.version = d.version;
  }
  function fill(card, p, whole) {
    var out = $(card, "run-output"), steps = $(card, "run-steps");
    if (whole || p.status != null) $(card, "run-status").textContent = p.status || "";
    if (whole || p.output != null) out.textContent = p.output || "";
    if (p.output_append) out.textContent += p.output_append;
    if (whole) steps.textContent = "";
    (p.steps || []).forEach(function (s) {
      var li = null;
      for (var i = 0; i < steps.children.length; i++) if (steps.children[i].dataset.stepId === s.id) li = steps.children[i];
      var fresh = !li;
      if (fresh) {
        li = document.createElement("li");
        li.dataset.stepId = s.id;
        ["kind", "title", "muted st", "detail"].forEach(function (c, i) {
          var e = document.createElement(i === 3 ? "div" : "span");
          e.className = c;
          li.appendChild(e);
          if (i < 3) li.appendChild(document.createTextNode(" "));
        });
        steps.appendChild(li);
      }
      [["kind", ".kind"], ["title", ".title"], ["status", ".st"], ["detail", ".detail"]].forEach(function (f) {
        if (fresh || s[f[0]]) li.querySelector(f[1]).textContent = s[f[0]] || "";
      });
      if (s.status) li.dataset.status = s.status;
    });
  }

  function onEvent(e) {
    var d = e.data || {};
    if ((e.thread_id || d.thread_id) !== threadID) return;
    switch (e.type) {
      case "message.created": case "message.updated": case "message.deleted": load("messages", d.id); break;
      case "reaction.added": case "reaction.removed": load("messages", d.message_id); break;
      case "run.state_changed": load("runs", d.id); break;
      case "run.updated": applyRun(d); break;
    }
  }

  // The gateway: identify by the cookie, focus the thread, resume from the last seq after a
  // drop; stop on the close codes that say reconnecting would not help.
  var cursor = thread.dataset.cursor ? +thread.dataset.cursor : null, backoff = 1000, beat = 0;
  function connect() {
    var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/gateway");
    function op(name, d) { if (ws.readyState === 1) ws.send(JSON.stringify({ op: name, d: d })); }
    ws.onmessage = function (m) {
      var f = JSON.parse(m.data), d = f.d || {};
      switch (f.op) {
        case "hello":
          op("identify", cursor === null ? {} : { cursor: cursor });
          clearInterval(beat);
          beat = setInterval(function () { op("heartbeat", {}); }, d.heartbeat_interval_ms || 30000);
          break;
        case "ready": backoff = 1000; op("focus", { thread_id: threadID }); thread.dataset.live = "1"; break;
        case "catchup.complete": cursor = d.head_seq; break;
        case "heartbeat": op("heartbeat.ack", {}); break;
        case "event": if (d.seq) cursor = d.seq; onEvent(d); break;
      }
    };
    ws.onclose = function (e) {
      clearInterval(beat);
      delete thread.dataset.live;
      if (e.code === 4004 || e.code === 4015 || e.code === 4017) return;
      if (e.code === 4016) cursor = null;
      setTimeout(connect, Math.random() * backoff);
      backoff = Math.min(backoff * 2, 60000);
    };
  }
  if (window.WebSocket) connect();

  function say(form, text) {
    var el = $(form, "form-error") || document.createElement("div");
    el.className = "flash error";
    el.setAttribute("role", "alert");
    el.dataset.testid = "form-error";
    el.textContent = text;
    if (!el.parentNode) form.prepend(el);
  }

  // Forms marked data-live (reactions, cancel) and the composer post with fetch.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.dataset.live) return;
    e.preventDefault();
    var fd = new FormData(f);
    if (e.submitter && e.submitter.name) fd.set(e.submitter.name, e.submitter.value);
    send(f.action, new URLSearchParams(fd)).then(function (h) { put(parse(h)); }, function (err) { say(f, err.message); });
  });

  var form = $(thread, "composer");
  if (!form) return;
  var input = $(form, "composer-input"), cid = form.querySelector('[name="client_msg_id"]');
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    if (!input.value.trim()) return;
    var body = new URLSearchParams(new FormData(form)), sent = input.value;
    input.value = "";
    send(form.action, body).then(function (h) {
      var err = $(form, "form-error");
      if (err) err.remove();
      if (!input.value.trim()) input.value = "";
      put(parse(h));
      var b = new Uint8Array(12);
      crypto.getRandomValues(b);
      cid.value = "console-" + Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join("");
    }, function (err) {
      if (!input.value) input.value = sent;
      say(form, err.message);
    });
  });

  // @ completion from the handles of the channel's members, rendered into the page.
  var members = (form.dataset.members || "").split(" ").filter(Boolean);
  var menu = form.querySelector(".complete"), picks = [], sel = 0;
  function word() {
    var m = /(?:^|[^\w.@-])@([\w.-]*)$/.exec(input.value.slice(0, input.selectionStart));
    return m ? m[1] : null;
  }
  function show() {
    var w = word();
    picks = w === null ? [] : members.filter(function (h) { return h.toLowerCase().indexOf(w.toLowerCase()) === 0 && h !== w; }).slice(0, 6);
    sel = 0;
    menu.textContent = "";
    picks.forEach(function (h, i) {
      var li = document.createElement("li");
      li.textContent = "@" + h;
      li.dataset.testid = "complete-option";
      if (i === sel) li.className = "on";
      li.addEventListener("mousedown", function (e) { e.preventDefault(); pick(h); });
      menu.appendChild(li);
    });
    menu.hidden = picks.length === 0;
  }
  function pick(h) {
    var at = input.selectionStart, before = input.value.slice(0, at), w = word();
    before = before.slice(0, before.length - w.length) + h + " ";
    input.value = before + input.value.slice(at);
    input.selectionStart = input.selectionEnd = before.length;
    picks = [];
    menu.hidden = true;
    input.focus();
  }
  input.addEventListener("input", show);
  input.addEventListener("blur", function () { menu.hidden = true; picks = []; });
  input.addEventListener("keydown", function (e) {
    if (picks.length) {
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        sel = (sel + (e.key === "ArrowDown" ? 1 : picks.length - 1)) % picks.length;
        Array.prototype.forEach.call(menu.children, function (li, i) { li.className = i === sel ? "on" : ""; });
        return;
      }
      if (e.key === "Enter" || e.key === "Tab") { e.preventDefault(); pick(picks[sel]); return; }
      if (e.key === "Escape") { menu.hidden = true; picks = []; return; }
    }
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
})();
