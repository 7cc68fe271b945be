// bothy console: the live parts of the pages. Every page works without it.
//
// On every page: the phone menu and the chat's channel drawer open in place (without the
// script they are :target), and <time datetime> shows in the reader's time zone.
//
// On a page of the chat view it connects to the gateway once, like any other client (the upgrade
// carries the session cookie, and an identify without a token identifies with it), focuses the
// thread the person writes in (the side pane's when one is open) and keeps every thread of the
// page live, each mounted on its own element (the channel's, and the replies beside it): a
// message, a reaction or a run that changes is fetched again as the server renders it
// (/console/messages/{id}/fragment, /console/runs/{id}/fragment), so the Markdown and every
// word shown stay in Go; run.updated patches are applied to the card as
// text. The composer and the forms of a message (reaction, edit, delete) and of a run (cancel)
// post with fetch and put the answer in place; the first reply under a message of a channel
// opens its form under the message, and a message's count of replies follows its thread. The
// messages stay at the newest while the reader is there, older pages load on scrolling up, and
// nothing the reader looks at moves. The composer uploads files as they are picked, dropped or
// pasted, and a message's images open in a viewer over the page.
"use strict";
(function () {
  function $(el, id) { return el.querySelector('[data-testid="' + id + '"]'); }
  // humanSize says a size in bytes as the server's pages do (ui/components/files_views.go).
  function humanSize(n) {
    if (n < 1024) return n + " B";
    var units = ["KB", "MB", "GB", "TB"], f = n / 1024, u = 0;
    while (f >= 1024 && u < units.length - 1) { f /= 1024; u++; }
    return (f < 10 ? f.toFixed(1) : Math.round(f)) + " " + units[u];
  }

  // Times: the server writes UTC; the reader reads their own zone, the whole date on hover.
  var clock = window.Intl && Intl.DateTimeFormat;
  var fmtTime = clock && new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
  var fmtDay = clock && new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  var fmtYear = clock && new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  var fmtFull = clock && new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });
  function localTimes(root) {
    if (!clock) return;
    var now = new Date();
    Array.prototype.forEach.call(root.querySelectorAll("time[datetime]"), function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) return;
      var f = d.toDateString() === now.toDateString() ? fmtTime : d.getFullYear() === now.getFullYear() ? fmtDay : fmtYear;
      t.textContent = f.format(d);
      t.title = fmtFull.format(d);
      t.dataset.local = "1";
    });
  }
  localTimes(document);

  // A form that opens with text to go on from (a reply's quote, the text being edited) puts
  // the caret after it.
  var start = document.querySelector("textarea[autofocus]");
  if (start) { start.focus(); start.setSelectionRange(start.value.length, start.value.length); }

  // The phone menu and the channel drawer: a link to #id opens the element in place; Escape, a
  // click outside or its close link shuts it.
  function toggler(link) {
    var panel = link && document.getElementById(link.getAttribute("href").slice(1));
    if (!panel) return;
    function set(open) {
      panel.classList.toggle("open", open);
      link.setAttribute("aria-expanded", open ? "true" : "false");
    }
    link.addEventListener("click", function (e) {
      e.preventDefault();
      e.stopPropagation();
      set(!panel.classList.contains("open"));
    });
    document.addEventListener("click", function (e) {
      if (!panel.classList.contains("open")) return;
      var close = e.target.closest && e.target.closest(".drawer-close, .menu-close");
      if (close && panel.contains(close)) { e.preventDefault(); set(false); return; }
      if (!panel.contains(e.target)) set(false);
    });
    document.addEventListener("keydown", function (e) { if (e.key === "Escape") set(false); });
  }
  toggler(document.querySelector('[data-testid="menu-toggle"]'));
  toggler(document.querySelector('[data-testid="channels-toggle"]'));

  // A message's image shows its thumbnail; until the thumbnail job has made it (the address
  // answers 404) the full image stands in, and file.updated puts the thumbnail back (thumbReady).
  document.addEventListener("error", function (e) {
    var img = e.target;
    if (img.tagName !== "IMG" || !img.dataset.full || img.dataset.fallback) return;
    img.dataset.fallback = "1";
    img.src = img.dataset.full;
  }, true);

  // The viewer: a message's image opens over the page, with its name and a download link;
  // ← and → go between the message's images, Escape or a click beside the controls closes it.
  // Without the script the preview is a link to the image itself.
  var viewer = null, viewing = [], viewAt = 0, viewFrom = null;
  function viewerEl() {
    if (viewer) return viewer;
    viewer = document.createElement("div");
    viewer.className = "viewer";
    viewer.hidden = true;
    viewer.dataset.testid = "viewer";
    viewer.setAttribute("role", "dialog");
    viewer.setAttribute("aria-modal", "true");
    viewer.setAttribute("aria-label", "Image");
    viewer.innerHTML = '<figure><img data-testid="viewer-image" alt=""><figcaption><span class="viewer-name" data-testid="viewer-name"></span>' +
      ' <span class="muted" data-testid="viewer-count"></span> <a class="button quiet" data-testid="viewer-download" download>Download</a>' +
      ' <button type="button" class="quiet" data-testid="viewer-close">Close</button></figcaption></figure>' +
      '<button type="button" class="viewer-prev" data-testid="viewer-prev" aria-label="Previous image">‹</button>' +
      '<button type="button" class="viewer-next" data-testid="viewer-next" aria-label="Next image">›</button>';
    viewer.addEventListener("click", function (e) {
      var b = e.target.closest("button, a, figcaption");
      if (b && b.dataset.testid === "viewer-prev") viewStep(-1);
      else if (b && b.dataset.testid === "viewer-next") viewStep(1);
      else if (!b || b.dataset.testid === "viewer-close") closeViewer();
    });
    document.body.appendChild(viewer);
    return viewer;
  }
  function viewShow(i) {
    var v = viewerEl(), a = viewing[i];
    viewAt = i;
    var img = $(v, "viewer-image");
    img.src = a.getAttribute("href");
    img.alt = a.dataset.name || "";
    $(v, "viewer-name").textContent = a.dataset.name || "";
    $(v, "viewer-count").textContent = viewing.length > 1 ? (i + 1) + " of " + viewing.length : "";
    var dl = $(v, "viewer-download");
    dl.href = a.getAttribute("href");
    dl.setAttribute("download", a.dataset.name || "");
    $(v, "viewer-prev").hidden = $(v, "viewer-next").hidden = viewing.length < 2;
  }
  function viewStep(d) { if (viewing.length > 1) viewShow((viewAt + d + viewing.length) % viewing.length); }
  function openViewer(a) {
    var box = a.closest(".previews") || a.parentNode;
    viewing = Array.prototype.slice.call(box.querySelectorAll("a[data-viewer]"));
    viewFrom = a;
    viewShow(Math.max(0, viewing.indexOf(a)));
    viewer.hidden = false;
    document.body.classList.add("viewing");
    $(viewer, "viewer-close").focus();
  }
  function closeViewer() {
    if (!viewer || viewer.hidden) return;
    viewer.hidden = true;
    $(viewer, "viewer-image").removeAttribute("src");
    document.body.classList.remove("viewing");
    if (viewFrom && viewFrom.isConnected) viewFrom.focus();
  }
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a[data-viewer]");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button) return;
    e.preventDefault();
    openViewer(a);
  });
  document.addEventListener("keydown", function (e) {
    if (!viewer || viewer.hidden) return;
    if (e.key === "Escape") closeViewer();
    else if (e.key === "ArrowLeft") viewStep(-1);
    else if (e.key === "ArrowRight") viewStep(1);
    else return;
    e.preventDefault();
    e.stopImmediatePropagation();
  }, true);

  // The service worker shows the Web Push notifications (static/sw.js). It is registered on
  // every page of a signed-in person, so a subscription made once goes on working.
  if ("serviceWorker" in navigator && document.querySelector('[data-testid="who"]')) {
    navigator.serviceWorker.register("/console/sw.js", { scope: "/console/" }).catch(function () {});
  }

  // The threads of the page: the channel's, and a thread under one of its messages in the side
  // pane. Each is mounted on its own element; one gateway connection feeds them all.
  var mounts = Array.prototype.map.call(document.querySelectorAll('[data-testid="thread"]'), function (el) { return { el: el, id: el.dataset.threadId }; });
  if (!mounts.length) return;
  var me = mounts[0].el.dataset.me;
  // The pane's thread is where the person types: the gateway follows it (run patches, no
  // notification of it); without a pane, the channel's.
  var side = document.querySelector('[data-testid="thread-pane"] [data-testid="thread"]');
  var focused = side ? side.dataset.threadId : mounts[0].id;

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
    localTimes(t.content);
    return t.content;
  }
  function first(html) { return parse(html).firstElementChild; }
  function mountOf(node) {
    for (var i = 0; i < mounts.length; i++) if (mounts[i].el.contains(node)) return mounts[i];
    return null;
  }
  function mountFor(threadID) {
    for (var i = 0; i < mounts.length; i++) if (mounts[i].id === threadID) return mounts[i];
    return null;
  }

  // place puts a message or run card where it belongs: in the thread that shows it already, or
  // as new in home (none: only what is shown is replaced). The copy of a message shown again
  // (the parent above the pane's replies, an echo without an id) follows it.
  function place(el, mine, home) {
    if (!el || !el.id) return;
    var old = document.getElementById(el.id), m = old ? mountOf(old) : home;
    if (m) m.put(el, mine);
    if (!el.classList.contains("msg")) return;
    Array.prototype.forEach.call(document.querySelectorAll('.msg[data-id="' + el.dataset.id + '"]:not([id])'), function (copy) {
      if ((copy.classList.contains("editing") && !mine) || +el.dataset.version < +copy.dataset.version) return;
      var c = el.cloneNode(true);
      c.removeAttribute("id");
      copy.replaceWith(c);
    });
  }
  function load(kind, id, home) {
    if (id) send("/console/" + kind + "/" + id + "/fragment").then(function (h) { place(first(h), false, home); }, function () {});
  }

  // A message with a thread under it shows how many replies it has and when the last came: a
  // thread started under a message on the page, and a reply that comes, changes or goes in the
  // thread of one, read that message again. Its readings go one after the other, so the last
  // one shown is one read after the last event.
  var reading = {};
  function reread(id) {
    if (reading[id]) { reading[id] = 2; return; }
    reading[id] = 1;
    send("/console/messages/" + id + "/fragment").then(function (h) { place(first(h)); }, function () {}).then(function () {
      var again = reading[id] === 2;
      delete reading[id];
      if (again) reread(id);
    });
  }
  function replies(e, d) {
    var parent = null;
    if (e.type === "thread.created" && d.parent_message_id) parent = document.querySelector('.msg[data-id="' + d.parent_message_id.replace(/[^0-9a-f-]/g, "") + '"]');
    else if (e.type.indexOf("message.") === 0 && (e.thread_id || d.thread_id)) {
      parent = document.querySelector('.msg[data-reply-thread="' + (e.thread_id || d.thread_id).replace(/[^0-9a-f-]/g, "") + '"]');
    }
    if (parent) reread(parent.dataset.id);
  }

  // What is new elsewhere: the counts of the left column are read again (/console/unread) when
  // a message arrives in a thread the page does not show or the person reads on another device.
  var unreadTimer = 0;
  function badge(cls, id, text) {
    var b = document.createElement("span");
    b.className = cls;
    b.dataset.testid = id;
    b.textContent = text;
    return b;
  }
  function setCounts(a, c) {
    var box = a.querySelector(".counts");
    if (!box) return;
    box.textContent = "";
    if (c && c[1] > 0) box.appendChild(badge("count mention", "mention-badge", "@" + c[1]));
    if (c && c[0] > 0) box.appendChild(badge("count", "unread-badge", String(c[0])));
    a.classList.toggle("unread", !!(c && c[0] > 0));
  }
  function refreshUnread() {
    fetch("/console/unread", { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (u) {
      if (!u) return;
      Array.prototype.forEach.call(document.querySelectorAll('[data-testid="channel-link"], [data-testid="dm-link"]'), function (a) {
        setCounts(a, u.channels[a.dataset.id]);
      });
      Array.prototype.forEach.call(document.querySelectorAll('[data-testid="thread-link"]'), function (a) {
        setCounts(a, u.threads[a.dataset.thread]);
      });
      var m = document.querySelector('[data-testid="mentions-link"]');
      if (m) setCounts(m, [0, u.mentions]);
      var ap = document.querySelector('[data-testid="approvals-link"] .counts');
      if (ap && typeof u.approvals === "number") {
        ap.textContent = "";
        if (u.approvals > 0) ap.appendChild(badge("count mention", "approvals-badge", String(u.approvals)));
      }
    }, function () {});
  }
  function unreadSoon() { clearTimeout(unreadTimer); unreadTimer = setTimeout(refreshUnread, 250); }

  function onEvent(e) {
    var d = e.data || {}, m = mountFor(e.thread_id || d.thread_id);
    if (e.type === "read_state.updated" || (e.type === "message.created" && !m && d.author_id !== me)) unreadSoon();
    // An approval asked of the person, or decided, changes what waits on them.
    if ((e.type === "approval.requested" || e.type === "approval.decided") && (d.approver_ids || []).indexOf(me) >= 0) unreadSoon();
    if (e.type === "message.pinned" || e.type === "message.unpinned") pinsOf(d.channel_id);
    if (e.type === "file.updated" && d.thumbnail && d.id) thumbReady(d.id);
    replies(e, d);
    if (m) m.event(e, d);
  }

  // A file's thumbnail is ready: the previews that stood in with the full image show it.
  function thumbReady(id) {
    Array.prototype.forEach.call(document.querySelectorAll('img[data-file="' + id.replace(/[^0-9a-f-]/g, "") + '"][data-fallback]'), function (img) {
      delete img.dataset.fallback;
      img.src = img.dataset.full.replace(/\/content$/, "/thumbnail") + "?ready=" + Date.now();
    });
  }

  // A pin made or taken off anywhere in the channel: its header's Pinned is read again (and
  // stays open if it was).
  function pinsOf(channelID) {
    var id = String(channelID || "").replace(/[^0-9a-f-]/g, "");
    var els = document.querySelectorAll('[data-testid="thread"][data-channel-id="' + id + '"] [data-testid="channel-pins"]');
    if (!id || !els.length) return;
    send("/console/channels/" + id + "/pins").then(function (h) {
      Array.prototype.forEach.call(els, function (old) {
        var el = first(h);
        if (!el || !old.isConnected) return;
        el.open = old.open;
        old.replaceWith(el);
      });
    }, function () {});
  }

  // The gateway: identify by the cookie, focus the thread, resume from the last seq after a
  // drop; stop on the close codes that say reconnecting would not help.
  var cursor = mounts[0].el.dataset.cursor ? +mounts[0].el.dataset.cursor : null, backoff = 1000, beat = 0, sock = null;
  function live(on) { mounts.forEach(function (m) { if (on) m.el.dataset.live = "1"; else delete m.el.dataset.live; }); }
  function op(name, d) { if (sock && sock.readyState === 1) sock.send(JSON.stringify({ op: name, d: d })); }
  function connect() {
    var ws = sock = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/gateway");
    ws.onmessage = function (m) {
      var f = JSON.parse(m.data), d = f.d || {};
      switch (f.op) {
        case "hello":
          op("identify", cursor === null ? {} : { cursor: cursor });
          clearInterval(beat);
          beat = setInterval(function () { op("heartbeat", {}); }, d.heartbeat_interval_ms || 30000);
          break;
        case "ready": backoff = 1000; op("focus", { thread_id: focused }); live(true); break;
        case "catchup.complete": cursor = d.head_seq; break;
        case "heartbeat": op("heartbeat.ack", {}); break;
        case "event": if (d.seq) cursor = d.seq; onEvent(d); break;
      }
    };
    ws.onclose = function (e) {
      clearInterval(beat);
      live(false);
      if (e.code === 4004 || e.code === 4015 || e.code === 4017) return;
      if (e.code === 4016) cursor = null;
      setTimeout(connect, Math.random() * backoff);
      backoff = Math.min(backoff * 2, 60000);
    };
  }

  function say(form, text) {
    var el = $(form, "form-error") || document.createElement("div");
    el.className = "flash error";
    el.setAttribute("role", "alert");
    el.dataset.testid = "form-error";
    el.textContent = text;
    if (!el.parentNode) form.prepend(el);
  }

  // Forms marked data-live (reactions, edit, delete, cancel) post with fetch; the answer is the
  // message or card as it now is.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.dataset.live) return;
    e.preventDefault();
    var fd = new FormData(f);
    if (e.submitter && e.submitter.name) fd.set(e.submitter.name, e.submitter.value);
    send(f.action, new URLSearchParams(fd)).then(function (h) { place(first(h), true, mountOf(f)); }, function (err) { say(f, err.message); });
  });

  function copied(a, text) {
    var was = a.textContent;
    a.textContent = text;
    a.classList.add("done");
    setTimeout(function () { a.textContent = was; a.classList.remove("done"); }, 2000);
  }
  function copy(a) {
    var url = new URL(a.getAttribute("href"), location.href).href;
    var done = function () { copied(a, "Link copied"); }, fail = function () {
      var t = document.createElement("textarea");
      t.value = url;
      document.body.appendChild(t);
      t.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (x) { ok = false; }
      t.remove();
      if (ok) done(); else window.prompt("Copy this link:", url);
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).then(done, fail);
    else fail();
  }

  // The message whose replies the pane shows is marked in the channel, and brought into view
  // when it is not.
  var opened = side && side.querySelector('[data-testid="thread-parent"] .msg');
  opened = opened && document.getElementById("m-" + opened.dataset.id);
  mounts.forEach(mount);
  if (opened) {
    opened.classList.add("hl");
    var ob = opened.getBoundingClientRect(), vb = opened.closest('[data-testid="messages"]').getBoundingClientRect();
    if (ob.top < vb.top || ob.bottom > vb.bottom) opened.scrollIntoView({ block: "center" });
  }
  if (window.WebSocket) connect();

  // mount makes one thread live: its scrolling and older pages, what the gateway says of it,
  // who types there, its read position, the actions of its messages and its composer.
  function mount(self) {
    var thread = self.el, threadID = self.id;
    var box = $(thread, "messages"), list = $(thread, "feed"), jump = $(thread, "jump");
    var latest = thread.hasAttribute("data-latest");

    // Scrolling. The messages scroll in reverse (CSS), so the page opens at the newest; below
    // is the distance of the newest from the bottom of the view.
    function below() { return list.getBoundingClientRect().bottom - box.getBoundingClientRect().bottom; }
    function atBottom() { return below() < 40; }
    function toBottom() { box.scrollTop += below(); }
    // keep runs change, which adds, replaces or grows what the thread shows, and then scrolls so
    // that the reader sees what they saw: the newest if they were there, else the same message
    // at the same place on the screen.
    function keep(change) {
      var pinned = atBottom(), anchor = null, top = 0, view = box.getBoundingClientRect();
      if (!pinned) {
        for (var el = list.firstElementChild; el; el = el.nextElementSibling) {
          var r = el.getBoundingClientRect();
          if (el.id && r.bottom > view.top) { anchor = el.id; top = r.top; break; }
        }
      }
      var out = change();
      if (pinned) toBottom();
      else if (anchor && document.getElementById(anchor)) box.scrollTop += document.getElementById(anchor).getBoundingClientRect().top - top;
      showJump();
      return out;
    }
    // unseen: a message came while the reader was scrolled up; the control says so.
    var unseen = false;
    // The control leads to the newest: below on the newest page, to it from an older one.
    function showJump() {
      var away = !latest || !atBottom();
      if (atBottom()) unseen = false;
      jump.hidden = !away;
      jump.textContent = unseen ? "New messages ↓" : "Jump to latest ↓";
      jump.dataset.unseen = unseen ? "1" : "";
    }
    jump.addEventListener("click", function () {
      if (!latest) { location.href = thread.dataset.href; return; }
      unseen = false;
      toBottom();
      showJump();
    });

    // At a permalink's message (#m-ID) the page opens there, marked; otherwise at the newest.
    var target = location.hash.indexOf("#m-") === 0 && document.getElementById(location.hash.slice(1));
    if (target && thread.contains(target)) target.scrollIntoView({ block: "center" });
    showJump();

    // Older pages load as the reader nears the top; what they look at stays where it is.
    var loadingOlder = false;
    function older() {
      var link = $(list, "older");
      if (!link || loadingOlder || list.getBoundingClientRect().top - box.getBoundingClientRect().top < -600) return;
      loadingOlder = true;
      send(link.href).then(function (h) {
        var page = parse(h);
        Array.prototype.slice.call(page.children).forEach(function (el) { if (el.id && document.getElementById(el.id)) el.remove(); });
        keep(function () { link.replaceWith(page); });
        loadingOlder = false;
        older();
      }, function () { loadingOlder = false; });
    }
    box.addEventListener("scroll", function () { showJump(); older(); }, { passive: true });
    older();

    // put replaces a message or run card of this thread, or places a new one: a run after its
    // message (and the runs already there), anything else at the end, on the newest page only.
    // A message that is being edited keeps its form.
    //
    // Fragments may come back out of order: an older rendering never replaces a newer one. A
    // run card rendered after a change of state but before a patch the card has applied already
    // is put in place and read again, to have both.
    self.put = function (el, mine) {
      var old = document.getElementById(el.id);
      if (old) {
        replace(old, el, mine);
        // One's own message that the gateway placed before the post answered: the reader
        // goes to it all the same.
        if (mine && latest) { toBottom(); showJump(); }
        return;
      }
      if (!latest) return;
      var at = el.dataset.trigger && document.getElementById("m-" + el.dataset.trigger);
      var away = !atBottom();
      keep(function () {
        if (at && thread.contains(at)) {
          while (at.nextElementSibling && at.nextElementSibling.classList.contains("run")) at = at.nextElementSibling;
          at.after(el);
        } else {
          list.appendChild(el);
        }
      });
      if (mine) toBottom();
      else if (away && el.classList.contains("msg")) unseen = true;
      showJump();
    };

    function replace(old, el, mine) {
      if (old.classList.contains("editing") && !mine) return;
      var run = el.classList.contains("run"), stale = false;
      if (run) {
        if (+el.dataset.updated < +old.dataset.updated) return;
        stale = +el.dataset.version < +old.dataset.version;
      } else if (+el.dataset.version < +old.dataset.version) return;
      if (old.classList.contains("hl")) el.classList.add("hl");
      keep(function () { old.replaceWith(el); });
      if (stale) load("runs", el.dataset.runId, self);
    }

    // Run updates (docs/gateway.md): a patch applies on its base version, a whole document
    // replaces, an old frame is dropped, and a gap reads the card again.
    function applyRun(d) {
      var card = document.getElementById("r-" + d.run_id);
      if (!card) { load("runs", d.run_id, self); return; }
      var have = +card.dataset.version;
      if (d.version <= have) return;
      if (d.document) keep(function () { fill(card, d.document, true); });
      else if (d.patch && d.base_version === have) keep(function () { fill(card, d.patch, false); });
      else { load("runs", d.run_id, self); return; }
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

    // A message that arrives here is read when the person sees it: the page open, this thread
    // shown (not under the pane on a phone) and at its newest.
    var toRead = null;
    function seen() {
      if (!toRead || document.visibilityState !== "visible" || !box.offsetParent || !atBottom() || !latest) return;
      var id = toRead, csrf = document.querySelector('input[name="csrf_token"]');
      toRead = null;
      if (csrf) send("/console/threads/" + threadID + "/read", new URLSearchParams({ csrf_token: csrf.value, message_id: id })).catch(function () {});
    }
    document.addEventListener("visibilitychange", seen);
    box.addEventListener("scroll", seen, { passive: true });

    self.event = function (e, d) {
      switch (e.type) {
        case "message.created":
          if (d.author_id !== me) { toRead = d.id; setTimeout(seen, 0); }
          stoppedTyping(d.author_id);
          load("messages", d.id, self);
          break;
        case "message.updated": case "message.deleted": load("messages", d.id); break;
        case "reaction.added": case "reaction.removed": case "message.pinned": case "message.unpinned": load("messages", d.message_id); break;
        case "run.state_changed": load("runs", d.id, self); break;
        case "approval.requested": case "approval.decided": load("runs", d.run_id); break;
        case "run.updated": applyRun(d); break;
        case "typing.started": typed(d.principal_id); break;
      }
    };

    // Who types in this thread: a typing.started names them for a few seconds (the typer sends
    // it again every few seconds while typing); a message of theirs ends it at once.
    var typingLine = $(thread, "typing"), typers = {}, names = {};
    try { var nf = $(thread, "composer"); if (nf && nf.dataset.names) names = JSON.parse(nf.dataset.names); } catch (x) { names = {}; }
    function showTypers() {
      if (!typingLine) return;
      var who = Object.keys(typers).map(function (id) { return names[id] || "Someone"; }).sort();
      typingLine.hidden = who.length === 0;
      typingLine.textContent = who.length === 0 ? "" : who.length === 1 ? who[0] + " is typing…" :
        who.length === 2 ? who[0] + " and " + who[1] + " are typing…" : "Several people are typing…";
    }
    function typed(id) {
      if (!id || id === me) return;
      clearTimeout(typers[id]);
      typers[id] = setTimeout(function () { delete typers[id]; showTypers(); }, 6000);
      showTypers();
    }
    function stoppedTyping(id) {
      if (typers[id] === undefined) return;
      clearTimeout(typers[id]);
      delete typers[id];
      showTypers();
    }

    // The actions of a message. Edit and delete fetch their form from the address the link goes
    // to without the script and show it in the message; a reply in a thread puts a quote of the
    // message in the composer; copy link copies the message's permalink.
    var form = $(thread, "composer");
    var input = form && $(form, "composer-input");
    function closeForm(msg) {
      var f = msg.querySelector("form.edit, form.confirm, form.reply");
      if (f) keep(function () { f.remove(); msg.classList.remove("editing"); var b = $(msg, "message-body"); if (b) b.hidden = false; });
    }
    function openForm(msg, url, replaceBody) {
      closeForm(msg);
      return send(url).then(function (h) {
        // A newer rendering of the message may have replaced it while the form loaded.
        if (msg.id && !msg.isConnected) msg = document.getElementById(msg.id) || msg;
        var f = first(h), body = $(msg, "message-body");
        keep(function () {
          msg.classList.add("editing");
          if (replaceBody && body) body.hidden = true;
          (body || $(msg, "message-deleted")).after(f);
        });
        var field = f.querySelector("textarea") || f.querySelector("button");
        if (field) {
          field.focus();
          if (field.setSelectionRange) field.setSelectionRange(field.value.length, field.value.length);
        }
        return f;
      });
    }
    // An open form (an edit, the first reply under a message of the channel) sends on Enter
    // and closes on Escape; the first reply posts as a page does, which leads to its thread.
    function inPlace(msg, url, replaceBody) {
      openForm(msg, url, replaceBody).then(function (f) {
        f.querySelector("textarea").addEventListener("keydown", function (e) {
          if (e.key === "Escape") { e.preventDefault(); closeForm(f.closest(".msg") || msg); if (input) input.focus(); }
          else if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); f.requestSubmit(); }
        });
      }, function (err) { say(msg, err.message); });
    }
    function edit(msg) { inPlace(msg, "/console/messages/" + msg.dataset.id + "/edit", true); }
    thread.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest("a[data-action]");
      if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button) return;
      var msg = a.closest(".msg");
      if (!msg) return;
      switch (a.dataset.action) {
        case "copy": e.preventDefault(); copy(a); break;
        case "edit": e.preventDefault(); edit(msg); break;
        case "delete": e.preventDefault(); openForm(msg, a.href, false).catch(function (err) { say(msg, err.message); }); break;
        case "reply": e.preventDefault(); inPlace(msg, a.href, false); break;
        case "close": e.preventDefault(); closeForm(msg); break;
        case "quote":
          if (!input) return;
          e.preventDefault();
          send(a.href).then(function (q) {
            input.value = input.value.trim() ? input.value.replace(/\s*$/, "\n\n") + q : q;
            input.focus();
            input.setSelectionRange(input.value.length, input.value.length);
          }, function (err) { say(form, err.message); });
          break;
      }
    });

    if (!form) return;
    var cid = form.querySelector('[name="client_msg_id"]');

    // Files. The attach button, a drop on the thread and an image pasted into the composer each
    // upload at once (POST /api/v1/files with the session and the page's CSRF token) as a chip
    // with its progress; the message then carries their ids as attachment_id fields, and may
    // be sent without text. A chip's × takes its file off (stopping its upload); a refused
    // upload says why on its chip.
    var attach = $(form, "composer-files"), chips = attach && $(attach, "attachment-chips"), uploads = [];
    var maxFiles = attach ? +attach.dataset.max || 10 : 0;
    function uploading() { return uploads.some(function (u) { return !u.id && !u.failed; }); }
    function carried() { return uploads.some(function (u) { return u.id; }); }
    function filesChanged() { input.required = uploads.length === 0; }
    function clearFiles() {
      uploads.forEach(function (u) { u.chip.remove(); });
      uploads = [];
      filesChanged();
    }
    function upload(file) {
      if (uploads.filter(function (u) { return !u.failed; }).length >= maxFiles) { say(form, "A message carries at most " + maxFiles + " files."); return; }
      var name = file.name || "pasted-image." + ((file.type || "").split("/")[1] || "bin");
      var u = { id: "", failed: false, chip: document.createElement("li") }, li = u.chip;
      li.className = "chip";
      li.dataset.testid = "attachment-chip";
      li.dataset.state = "uploading";
      function part(tag, cls, id, text) {
        var el = document.createElement(tag);
        el.className = cls;
        el.dataset.testid = id;
        if (text) el.textContent = text;
        li.appendChild(el);
        return el;
      }
      part("span", "chip-name", "attachment-chip-name", name);
      part("span", "muted", "attachment-chip-size", humanSize(file.size));
      var bar = part("progress", "", "attachment-progress");
      bar.max = file.size || 1;
      bar.value = 0;
      var note = part("span", "chip-error", "attachment-error");
      var x = part("button", "chip-remove quiet", "attachment-remove", "×");
      x.type = "button";
      x.title = "Remove " + name;
      x.setAttribute("aria-label", "Remove " + name);
      chips.appendChild(li);
      uploads.push(u);
      filesChanged();
      var xhr = new XMLHttpRequest(), csrf = form.querySelector('input[name="csrf_token"]');
      function fail(text) {
        u.failed = true;
        bar.remove();
        li.dataset.state = "error";
        note.textContent = text;
      }
      xhr.open("POST", "/api/v1/files?name=" + encodeURIComponent(name));
      xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
      if (csrf) xhr.setRequestHeader("Bothy-CSRF", csrf.value);
      xhr.upload.onprogress = function (e) { if (e.lengthComputable) { bar.max = e.total; bar.value = e.loaded; } };
      xhr.onload = function () {
        var got = null;
        try { got = JSON.parse(xhr.responseText); } catch (x) { got = null; }
        if (xhr.status === 201 && got && got.id) {
          u.id = got.id;
          bar.remove();
          li.dataset.state = "done";
          li.dataset.id = got.id;
          var field = document.createElement("input");
          field.type = "hidden";
          field.name = "attachment_id";
          field.value = got.id;
          li.appendChild(field);
        } else if (xhr.status === 413) {
          fail((got && got.detail) || "The file is too large.");
        } else {
          fail((got && got.detail) || "The upload failed (" + xhr.status + ").");
        }
      };
      xhr.onerror = function () { fail("The upload failed: the server could not be reached."); };
      x.addEventListener("click", function () {
        if (!u.id && !u.failed) xhr.abort();
        uploads.splice(uploads.indexOf(u), 1);
        li.remove();
        filesChanged();
        input.focus();
      });
      xhr.send(file);
    }
    function uploadAll(list) { Array.prototype.forEach.call(list || [], upload); }
    if (attach) {
      attach.hidden = false;
      var picker = $(attach, "attach-input");
      picker.addEventListener("change", function () { uploadAll(picker.files); picker.value = ""; input.focus(); });
      var dragging = function (e) { return e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types || [], "Files") >= 0; };
      thread.addEventListener("dragover", function (e) {
        if (!dragging(e)) return;
        e.preventDefault();
        e.stopPropagation();
        e.dataTransfer.dropEffect = "copy";
        thread.classList.add("dropping");
      });
      thread.addEventListener("dragleave", function (e) { if (!thread.contains(e.relatedTarget)) thread.classList.remove("dropping"); });
      thread.addEventListener("drop", function (e) {
        thread.classList.remove("dropping");
        if (!e.dataTransfer || !e.dataTransfer.files.length) return;
        e.preventDefault();
        e.stopPropagation();
        uploadAll(e.dataTransfer.files);
        input.focus();
      });
      input.addEventListener("paste", function (e) {
        var cd = e.clipboardData, list = cd && cd.files;
        if (!list || !list.length) return;
        // A copied image may come with text that names it: the image is what was meant.
        if (!cd.getData("text/plain")) e.preventDefault();
        uploadAll(list);
      });
    }
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      if (uploading()) { say(form, "Wait until the files are uploaded."); return; }
      if (!input.value.trim() && !carried()) return;
      var body = new URLSearchParams(new FormData(form)), sent = input.value;
      input.value = "";
      send(form.action, body).then(function (h) {
        var err = $(form, "form-error");
        if (err) err.remove();
        if (!input.value.trim()) input.value = "";
        clearFiles();
        place(first(h), true, self);
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
    // / completion: the slash commands of the thread's channel, read once from
    // /console/threads/{id}/commands when "/" starts the message; Enter, Tab or a click puts the
    // command in the composer (/name@handle when two agents share the name).
    var cmdMenu = document.createElement("ul"), cmds = null, cmdPicks = [], cmdSel = 0;
    cmdMenu.className = "complete commands";
    cmdMenu.dataset.testid = "command-list";
    cmdMenu.hidden = true;
    input.after(cmdMenu);
    function showCommands() {
      var m = /^\/([a-z0-9_-]*)$/.exec(input.value.slice(0, input.selectionStart));
      cmdPicks = [];
      if (m && cmds === null) {
        cmds = [];
        fetch("/console/threads/" + threadID + "/commands", { credentials: "same-origin", headers: { Accept: "application/json" } })
          .then(function (r) { return r.ok ? r.json() : []; })
          .then(function (l) { cmds = l || []; showCommands(); }, function () { cmds = []; });
      } else if (m) {
        cmdPicks = cmds.filter(function (c) { return c.name.indexOf(m[1]) === 0; }).slice(0, 8);
      }
      cmdSel = 0;
      cmdMenu.textContent = "";
      cmdPicks.forEach(function (c, i) {
        var li = document.createElement("li"), b = document.createElement("b");
        li.dataset.testid = "command-option";
        b.textContent = c.insert;
        li.appendChild(b);
        li.appendChild(document.createTextNode((c.args_hint ? " " + c.args_hint : "") + (c.description ? " — " + c.description : "") + " · @" + c.agent_handle));
        if (i === cmdSel) li.className = "on";
        li.addEventListener("mousedown", function (e) { e.preventDefault(); pickCommand(c); });
        cmdMenu.appendChild(li);
      });
      cmdMenu.hidden = cmdPicks.length === 0;
    }
    function pickCommand(c) {
      var head = c.insert + " ";
      input.value = head + input.value.slice(input.selectionStart).replace(/^\s+/, "");
      input.selectionStart = input.selectionEnd = head.length;
      cmdPicks = [];
      cmdMenu.hidden = true;
      input.focus();
    }
    input.addEventListener("input", showCommands);
    input.addEventListener("blur", function () { cmdMenu.hidden = true; cmdPicks = []; });
    // Registered before the composer's own keys, so that Enter picks instead of sending.
    input.addEventListener("keydown", function (e) {
      if (!cmdPicks.length) return;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        cmdSel = (cmdSel + (e.key === "ArrowDown" ? 1 : cmdPicks.length - 1)) % cmdPicks.length;
        Array.prototype.forEach.call(cmdMenu.children, function (li, i) { li.className = i === cmdSel ? "on" : ""; });
      } else if (e.key === "Enter" || e.key === "Tab") {
        pickCommand(cmdPicks[cmdSel]);
        picked = true;
      } else if (e.key === "Escape") {
        cmdMenu.hidden = true;
        cmdPicks = [];
      } else {
        return;
      }
      e.preventDefault();
      e.stopImmediatePropagation();
    });
    // The key that picked inserts nothing, also where it arrives as a text input of its own.
    var picked = false;
    input.addEventListener("beforeinput", function (e) {
      if (picked && (e.inputType === "insertLineBreak" || e.inputType === "insertParagraph" || e.data === "\t" || e.data === "\r" || e.data === "\n")) e.preventDefault();
    });
    input.addEventListener("keyup", function () { picked = false; });
    input.addEventListener("input", show);
    // Typing: tell the thread at most every three seconds while the person writes.
    var lastTyping = 0;
    input.addEventListener("input", function () {
      var now = Date.now();
      if (!input.value.trim() || now - lastTyping < 3000) return;
      lastTyping = now;
      op("typing.start", { thread_id: threadID });
    });
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
      // ↑ on an empty composer edits the person's newest message that they may edit.
      if (e.key === "ArrowUp" && !input.value && !e.shiftKey && !e.altKey) {
        var mine = list.querySelectorAll(".msg[data-can-edit]");
        if (mine.length) { e.preventDefault(); edit(mine[mine.length - 1]); }
        return;
      }
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
  }
})();
