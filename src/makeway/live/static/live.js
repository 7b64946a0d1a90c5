// Live updates: each committed scheduling pass arrives as a server-sent event; the page's #live part
// (an htmx element listening for "mw-pass") re-fetches itself. Without this script pages still work.
(function () {
  if (!window.EventSource) return;
  var status = document.getElementById("live-status");
  var source = new EventSource(document.body.dataset.events || "/v1/events");
  source.addEventListener("pass", function (e) {
    var info = {};
    try { info = JSON.parse(e.data); } catch (err) { return; }
    if (status) status.textContent = "pass " + info.pass + " · t=" + Number(info.now).toFixed(1) + " s · live";
    if (window.htmx) window.htmx.trigger(document.body, "mw-pass", info);
  });
  source.addEventListener("hello", function () {
    document.body.dataset.stream = "open";
    if (status) status.classList.add("connected");
  });
  source.addEventListener("bye", function () {
    source.close();  // the server is stopping; a reload reconnects
    document.body.dataset.stream = "closed";
    if (status) status.classList.remove("connected");
  });
  source.onerror = function () {
    document.body.dataset.stream = "error";  // EventSource retries by itself
    if (status) status.classList.remove("connected");
  };
})();
