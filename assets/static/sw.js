// bothy console's service worker: it shows the Web Push notifications the server sends and
// opens the message a notification is about. It caches nothing: the console is served fresh.
//
// A push carries ids and the reason ({message_id, channel_id, thread_id, reason}), and a short
// preview only where the person allowed previews; the notification says why it came and, with
// a preview, what the message says.
"use strict";
var titles = {
  mention: "You were mentioned",
  dm: "New direct message",
  thread: "New reply in a thread you follow",
  all: "New message"
};

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (e) { e.waitUntil(self.clients.claim()); });

self.addEventListener("push", function (e) {
  var d = {};
  try { d = e.data ? e.data.json() : {}; } catch (x) { d = {}; }
  var title = titles[d.reason] || "bothy";
  e.waitUntil(self.registration.showNotification(title, {
    body: d.preview || "Open bothy to read it.",
    icon: "/console/icon-192.png",
    tag: d.thread_id || undefined,
    data: { url: d.message_id ? "/console/messages/" + encodeURIComponent(d.message_id) : "/console/chat" }
  }));
});

self.addEventListener("notificationclick", function (e) {
  e.notification.close();
  var url = (e.notification.data && e.notification.data.url) || "/console/chat";
  e.waitUntil(self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (list) {
    for (var i = 0; i < list.length; i++) {
      if ("focus" in list[i] && "navigate" in list[i]) return list[i].navigate(url).then(function (c) { return c && c.focus(); });
    }
    return self.clients.openWindow(url);
  }));
});
