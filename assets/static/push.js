// bothy console: "Notifications on this device" on the account page, the only page that loads
// this file. Turn on notifications asks the browser's permission, reads the instance's VAPID
// key (GET /console/push/key), subscribes the service worker that console.js registers
// (static/sw.js) with the browser's push service, and registers the subscription with the
// server (POST /console/push/subscriptions, JSON, the CSRF token in a header); the page then
// reloads and lists the browser. Without this script the list and its Remove forms still work.
"use strict";
(function () {
  var section = document.querySelector('[data-testid="push"]');
  if (!section) return;
  function $(id) { return section.querySelector('[data-testid="' + id + '"]'); }
  var status = $("push-status"), button = $("push-enable"), previews = $("push-previews");
  function say(step, text) { section.dataset.step = step; status.textContent = text; }

  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    say("unsupported", "This browser cannot show notifications from a web page.");
    return;
  }
  $("push-controls").hidden = false;

  // within is p, or an error saying why when it has not settled after ms: a browser that
  // refused the service worker never resolves navigator.serviceWorker.ready, and one whose push
  // service is out of reach may never answer a subscribe.
  function within(p, ms, why) {
    return Promise.race([p, new Promise(function (_, reject) {
      setTimeout(function () { reject(new Error(why)); }, ms);
    })]);
  }
  function ready() { return within(navigator.serviceWorker.ready, 10000, "the service worker did not start"); }

  // The browser this page runs in, when it has a subscription already: its row says so.
  ready().then(function (reg) { return reg.pushManager.getSubscription(); }).then(function (sub) {
    if (!sub) return;
    Array.prototype.forEach.call(section.querySelectorAll('[data-testid="push-device"]'), function (li) {
      if (li.dataset.endpoint === sub.endpoint) li.querySelector('[data-testid="push-this-device"]').hidden = false;
    });
  }).catch(function () {});

  // key is the base64url VAPID key as the bytes applicationServerKey takes.
  function key(b64) {
    var s = atob(b64.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((b64.length + 3) % 4));
    var out = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }

  function permission() {
    if (Notification.permission === "granted") return Promise.resolve("granted");
    return new Promise(function (resolve) {
      var p = Notification.requestPermission(resolve);
      if (p && p.then) p.then(resolve);
    });
  }

  button.addEventListener("click", function () {
    button.disabled = true;
    say("permission", "Asking this browser for permission…");
    permission().then(function (p) {
      if (p !== "granted") throw new Error("notifications are blocked for this site: allow them in the browser's settings");
      say("key", "Subscribing this browser…");
      return fetch("/console/push/key", { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("the server did not give its key");
        return r.json();
      });
    }).then(function (k) {
      return ready().then(function (reg) {
        say("subscribing", "Subscribing this browser…");
        return within(reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key(k.public_key) }), 30000,
          "the browser's push service did not answer");
      });
    }).then(function (sub) {
      var body = sub.toJSON();
      body.previews = previews.checked;
      return fetch("/console/push/subscriptions", {
        method: "POST", credentials: "same-origin", body: JSON.stringify(body),
        headers: { "Content-Type": "application/json", "Bothy-CSRF": section.dataset.csrf }
      }).then(function (r) {
        if (r.ok && !r.redirected) { say("on", "Notifications are on for this browser."); location.reload(); return; }
        return r.text().then(function (t) {
          throw new Error((r.headers.get("Content-Type") || "").indexOf("text/plain") === 0 ? t : "the server did not take the subscription");
        });
      });
    }).catch(function (e) {
      say("failed", "Notifications could not be turned on: " + (e && e.message ? e.message : e));
      button.disabled = false;
    });
  });
})();
