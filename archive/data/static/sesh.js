/* sesh-archive pages. Loaded synchronously inside the content block, so it runs before
   Datasette's base template adds its own click handler (_close_open_menus.html), which
   closes EVERY open <details> on any click: on a conversation opening a second tool call
   closed the first. This handler is registered first on <body>, closes only Datasette's
   menus the click is outside of (what the base handler is for) and stops the base one. */
(function () {
  document.body.addEventListener("click", function (ev) {
    var inside = ev.target && ev.target.closest ? ev.target.closest("details") : null;
    document.querySelectorAll("details.nav-menu[open], details.actions-menu-links[open]").forEach(function (d) {
      if (d !== inside) d.open = false;
    });
    ev.stopImmediatePropagation();
  });

  function openTo(el) {
    for (var p = el; p; p = p.parentElement) { if (p.tagName === "DETAILS") p.open = true; }
    el.scrollIntoView();
  }

  /* A link to #b123 or #msg-x may point into a folded block (unfold it) or into another
     page of a long thread (ask the server for the page that holds it). */
  function followHash() {
    var id = location.hash ? decodeURIComponent(location.hash.slice(1)) : "";
    if (!id) return;
    var el = document.getElementById(id);
    if (el) { openTo(el); return; }
    var main = document.querySelector("[data-sesh-thread]");
    if (!main || /[?&](block|message)=/.test(location.search)) return;
    var m = /^b(\d+)$/.exec(id), q = null;
    if (m) q = "block=" + m[1];
    else if (id.indexOf("msg-") === 0) q = "message=" + encodeURIComponent(id.slice(4));
    if (q) location.replace(location.pathname + "?" + q + location.hash);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-sesh-fold]").forEach(function (button) {
      button.addEventListener("click", function () {
        var open = button.getAttribute("data-sesh-fold") === "open";
        var scope = document.querySelector(button.getAttribute("data-scope") || ".sesh-chat") || document;
        scope.querySelectorAll("details.sesh-fold").forEach(function (d) { d.open = open; });
      });
    });
    document.querySelectorAll("[data-sesh-hide]").forEach(function (box) {
      box.addEventListener("change", function () {
        document.body.classList.toggle("sesh-hide-" + box.getAttribute("data-sesh-hide"), !box.checked);
      });
    });
    followHash();
  });
  window.addEventListener("hashchange", followHash);
})();
