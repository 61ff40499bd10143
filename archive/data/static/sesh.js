/* sesh-archive pages. Loaded synchronously inside the content block, so it runs before
   Datasette's base template adds its own click handler (_close_open_menus.html), which
   closes EVERY open <details> on any click: on a conversation opening a second tool call
   closed the first. This handler is registered first on <body>, closes only Datasette's
   menus the click is outside of (what the base handler is for) and stops the base one.

   The workspace (issue 41): on a wide screen a session chosen in the side list is fetched
   as the conversation pane alone (X-Sesh-Pane) and put beside the list, which keeps its
   scroll and filters; history.pushState keeps the address a full page that works without
   this script. Keys: j/k messages, [/] sessions, / or Ctrl-K the search palette, ? the
   keys, Esc closes. The theme switch is remembered in localStorage ("sesh-theme"). Open
   pages poll /-/sesh/live every POLL_MS and fetch what changed (see docs/web.md). */
(function () {
  var THEME_KEY = "sesh-theme", POLL_MS = 1000, WIDE = "(min-width: 1000px)";
  var root = document.documentElement;
  try { var saved = localStorage.getItem(THEME_KEY); if (saved) root.setAttribute("data-theme", saved); } catch (e) {}

  document.body.addEventListener("click", function (ev) {
    var inside = ev.target && ev.target.closest ? ev.target.closest("details") : null;
    document.querySelectorAll("details.nav-menu[open], details.actions-menu-links[open]").forEach(function (d) {
      if (d !== inside) d.open = false;
    });
    ev.stopImmediatePropagation();
  });

  function base() {  // Datasette's base_url: the script's own path ends in -/sesh/static/sesh.js
    var s = document.querySelector("script[src$='sesh/static/sesh.js']");
    return s ? s.getAttribute("src").replace(/-\/sesh\/static\/sesh\.js.*$/, "") : "/";
  }

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

  /* ------------------------------------------------ conversation controls (delegated: the pane is replaced) */
  document.addEventListener("click", function (ev) {
    var button = ev.target.closest && ev.target.closest("[data-sesh-fold]");
    if (!button) return;
    var open = button.getAttribute("data-sesh-fold") === "open";
    var scope = document.querySelector(button.getAttribute("data-scope") || ".sesh-chat") || document;
    scope.querySelectorAll("details.sesh-fold").forEach(function (d) { d.open = open; });
  }, true);  // capture: the body's handler above stops the click from bubbling to document
  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (box.hasAttribute && box.hasAttribute("data-sesh-hide"))
      document.body.classList.toggle("sesh-hide-" + box.getAttribute("data-sesh-hide"), !box.checked);
  });

  /* ------------------------------------------------ the workspace: list beside conversation */
  function pane() { return document.getElementById("sesh-pane"); }
  function side() { return document.getElementById("sesh-side"); }

  function markCurrent(threadId) {
    var s = side();
    if (!s) return;
    s.querySelectorAll(".sesh-side-item").forEach(function (li) {
      var on = li.getAttribute("data-thread") === threadId;
      li.classList.toggle("sesh-current", on);
      var a = li.querySelector("a");
      if (a) { if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current"); }
    });
  }

  function loadPane(url, push) {
    return fetch(url, { headers: { "X-Sesh-Pane": "1" }, credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.text();
    }).then(function (html) {
      pane().innerHTML = html;
      var layout = pane().querySelector("[data-sesh-thread]");
      if (layout) {
        document.title = layout.getAttribute("data-sesh-title") + " - sesh-archive";
        markCurrent(layout.getAttribute("data-sesh-thread"));
      }
      if (push) history.pushState({ seshPane: true }, "", url);
      focused = -1;
      if (location.hash) followHash(); else window.scrollTo(0, 0);
      live.thread();
    }).catch(function () { location.href = url; });
  }

  document.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest("a[data-sesh-open]");
    if (!a || !pane() || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    if (!window.matchMedia(WIDE).matches) return;  // a phone: one column, a plain page load
    ev.preventDefault();
    loadPane(a.href, true);
  }, true);
  window.addEventListener("popstate", function () { if (pane()) loadPane(location.href, false); });

  function sideUrl(params) {
    var layout = document.querySelector("[data-sesh-thread]");
    params.set("current", layout ? layout.getAttribute("data-sesh-thread") : "");
    return base() + "-/sesh/side?" + params.toString();
  }
  function refreshSide(params) {  // keeps the list's scroll position
    var s = side();
    if (!s) return Promise.resolve();
    var top = s.scrollTop;
    return fetch(sideUrl(params), { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { s.innerHTML = html; s.scrollTop = top; } });
  }
  function listParams() {  // the list's filters: those of the address (the side form writes them there)
    var p = new URLSearchParams(location.search);
    ["page", "block", "message"].forEach(function (k) { p.delete(k); });
    return p;
  }
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.hasAttribute("data-sesh-side-form") || !pane()) return;
    ev.preventDefault();
    var p = new URLSearchParams(new FormData(form));
    Array.from(p.keys()).forEach(function (k) { if (!p.get(k)) p.delete(k); });
    if (p.get("sort") === "recent") p.delete("sort");
    history.replaceState(history.state, "", location.pathname + (p.toString() ? "?" + p.toString() : "") + location.hash);
    refreshSide(p);
  });

  /* ------------------------------------------------ keys */
  var focused = -1;
  function messages() { return Array.prototype.slice.call(document.querySelectorAll(".sesh-chat > .sesh-msg")); }
  function moveMessage(step) {
    var all = messages();
    if (!all.length) return;
    if (focused < 0 || focused >= all.length || !all[focused].classList.contains("sesh-focus")) {
      // from the first message in view
      focused = step > 0 ? -1 : all.length;
      for (var i = 0; i < all.length; i++) { if (all[i].getBoundingClientRect().bottom > 60) { focused = i - (step > 0 ? 1 : 0); break; } }
    }
    all.forEach(function (m) { m.classList.remove("sesh-focus"); });
    focused = Math.max(0, Math.min(all.length - 1, focused + step));
    all[focused].classList.add("sesh-focus");
    all[focused].scrollIntoView({ block: "start" });
    history.replaceState(history.state, "", "#" + all[focused].id);
  }
  function moveSession(step) {
    var items = Array.prototype.slice.call(document.querySelectorAll(".sesh-side-item"));
    if (!items.length) return;
    var at = -1;
    items.forEach(function (li, i) { if (li.classList.contains("sesh-current")) at = i; });
    var next = items[Math.max(0, Math.min(items.length - 1, at + step))];
    if (!next || next === items[at]) return;
    var a = next.querySelector("a[data-sesh-open]");
    next.scrollIntoView({ block: "nearest" });
    if (window.matchMedia(WIDE).matches && pane()) loadPane(a.href, true); else location.href = a.href;
  }

  function overlay(id, build) {
    var el = document.getElementById(id);
    if (!el) {
      el = document.createElement("div");
      el.id = id; el.className = "sesh-overlay"; el.hidden = true;
      el.innerHTML = '<div class="sesh-dialog" role="dialog" aria-modal="true"></div>';
      el.addEventListener("click", function (ev) { if (ev.target === el) closeOverlays(); });
      document.body.appendChild(el);
      build(el.firstChild);
    }
    return el;
  }
  function closeOverlays() {
    var any = false;
    document.querySelectorAll(".sesh-overlay").forEach(function (o) { if (!o.hidden) { o.hidden = true; any = true; } });
    return any;
  }
  var KEYS = [["j / k", "next / previous message"], ["] / [", "next / previous session in the list"],
              ["/ or Ctrl-K", "search (as you type, grouped by session)"], ["?", "these keys"],
              ["Esc", "close"], ["Enter", "in search: open the chosen hit; \u2191 \u2193 choose"]];
  function showKeys() {
    closeOverlays();
    overlay("sesh-keys", function (d) {
      d.setAttribute("aria-label", "keys");
      d.innerHTML = "<h2>Keys</h2><dl class=\"sesh-keys\">" + KEYS.map(function (k) {
        return "<dt>" + k[0].split(" ").map(function (w) { return /^(or|\/)$/.test(w) && w !== "/" ? w : "<kbd>" + w + "</kbd>"; }).join(" ") +
          "</dt><dd>" + k[1] + "</dd>";
      }).join("") + "</dl>";
    }).hidden = false;
  }

  /* ------------------------------------------------ the search palette */
  var paletteTimer = null, paletteSeq = 0;
  function palette() {
    return overlay("sesh-palette", function (d) {
      d.setAttribute("aria-label", "search");
      d.innerHTML = '<form class="sesh-palette-form" action="' + base() + '-/sesh/search" method="get">' +
        '<input type="search" name="q" placeholder="search every session" autocomplete="off" aria-label="search">' +
        '<span class="sesh-palette-filters"></span></form><div class="sesh-palette-results" aria-live="polite"></div>';
      fetch(base() + "-/sesh/palette", { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : ""; })
        .then(function (html) { d.querySelector(".sesh-palette-filters").innerHTML = html; });
      var form = d.querySelector("form");
      form.addEventListener("input", schedule);
      form.addEventListener("change", schedule);
      form.addEventListener("submit", function (ev) {
        var sel = d.querySelector(".sesh-palette-results a.sesh-selected");
        if (sel) { ev.preventDefault(); location.href = sel.href; }
      });
      form.addEventListener("keydown", function (ev) {
        if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
        ev.preventDefault();
        var links = Array.prototype.slice.call(d.querySelectorAll(".sesh-palette-results a.sesh-hit-link"));
        if (!links.length) return;
        var at = links.findIndex(function (a) { return a.classList.contains("sesh-selected"); });
        if (at >= 0) links[at].classList.remove("sesh-selected");
        at = Math.max(0, Math.min(links.length - 1, at + (ev.key === "ArrowDown" ? 1 : -1)));
        links[at].classList.add("sesh-selected");
        links[at].scrollIntoView({ block: "nearest" });
      });
    });
  }
  function schedule() {
    clearTimeout(paletteTimer);
    paletteTimer = setTimeout(runPalette, 200);  // debounced: a query per pause, not per key
  }
  function runPalette() {
    var d = palette().firstChild, form = d.querySelector("form"), out = d.querySelector(".sesh-palette-results");
    var p = new URLSearchParams(new FormData(form));
    Array.from(p.keys()).forEach(function (k) { if (!p.get(k)) p.delete(k); });
    if (!p.get("q")) { out.innerHTML = ""; return; }
    var seq = ++paletteSeq, query = p.toString();
    out.setAttribute("aria-busy", "true");
    fetch(base() + "-/sesh/search?" + query, { headers: { "X-Sesh-Pane": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (seq !== paletteSeq) return;  // a later query is on its way: this answer is stale
        // the hit chosen with the arrows stays chosen when the new answer still holds it
        var chosen = out.querySelector("a.sesh-selected");
        out.innerHTML = html;
        if (chosen) {
          var again = Array.prototype.find.call(out.querySelectorAll("a.sesh-hit-link"), function (a) { return a.href === chosen.href; });
          if (again) again.classList.add("sesh-selected");
        }
        out.dataset.query = query;
        out.dataset.seq = seq;
        out.removeAttribute("aria-busy");
      });
  }
  function openPalette() {
    closeOverlays();
    var o = palette();
    o.hidden = false;
    var input = o.querySelector("input[name=q]");
    input.focus();
    input.select();
  }

  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  document.addEventListener("keydown", function (ev) {
    if ((ev.ctrlKey || ev.metaKey) && !ev.altKey && (ev.key === "k" || ev.key === "K")) { ev.preventDefault(); openPalette(); return; }
    if (ev.key === "Escape") { if (closeOverlays()) ev.preventDefault(); else if (typing(document.activeElement)) document.activeElement.blur(); return; }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || typing(ev.target)) return;
    var open = Array.prototype.some.call(document.querySelectorAll(".sesh-overlay"), function (o) { return !o.hidden; });
    if (ev.key === "?") { ev.preventDefault(); showKeys(); return; }
    if (open) return;
    if (ev.key === "/") { ev.preventDefault(); openPalette(); }
    else if (ev.key === "j") moveMessage(1);
    else if (ev.key === "k") moveMessage(-1);
    else if (ev.key === "]") moveSession(1);
    else if (ev.key === "[") moveSession(-1);
  });

  /* ------------------------------------------------ theme switch */
  var THEMES = ["auto", "dark", "light"];
  function themeLabel() { return "theme: " + (root.getAttribute("data-theme") || "auto"); }
  function addNavControls() {
    var nav = document.querySelector(".sesh-nav");
    if (!nav || nav.querySelector(".sesh-theme")) return;
    var b = document.createElement("button");
    b.type = "button"; b.className = "sesh-theme"; b.textContent = themeLabel();
    b.title = "colour scheme: follow the system, dark or light (remembered in this browser)";
    b.addEventListener("click", function () {
      var next = THEMES[(THEMES.indexOf(root.getAttribute("data-theme") || "auto") + 1) % THEMES.length];
      if (next === "auto") root.removeAttribute("data-theme"); else root.setAttribute("data-theme", next);
      try { if (next === "auto") localStorage.removeItem(THEME_KEY); else localStorage.setItem(THEME_KEY, next); } catch (e) {}
      b.textContent = themeLabel();
    });
    var k = document.createElement("a");
    k.href = "#"; k.className = "sesh-keys-hint"; k.innerHTML = "<kbd>?</kbd> keys";
    k.addEventListener("click", function (ev) { ev.preventDefault(); showKeys(); });
    nav.appendChild(b);
    nav.appendChild(k);
  }

  /* ------------------------------------------------ live: new sessions and messages without a reload */
  var live = (function () {
    // The list costs what the sessions page costs (0.6-1.6 s on the 1 GB corpus, docs/benchmarks.md):
    // refreshed at most every LIST_MS while a session is being written; the open conversation each change.
    var version = null, busy = false, listAt = 0, listDue = false, LIST_MS = 5000;
    function layout() { return document.querySelector("[data-sesh-thread]"); }
    function url() {
      var l = layout();
      return base() + "-/sesh/live" + (l ? "?thread=" + encodeURIComponent(l.getAttribute("data-sesh-thread")) : "");
    }
    function mergeThread() {
      // fetch the open page of the conversation again and add the messages it lacks
      var l = layout();
      var here = location.pathname + location.search;
      return fetch(here, { headers: { "X-Sesh-Pane": "1" }, credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null || layout() !== l) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          var chat = document.querySelector(".sesh-chat"), fresh = doc.querySelector(".sesh-chat");
          if (!chat || !fresh) return;
          fresh.querySelectorAll(":scope > .sesh-msg").forEach(function (m) {
            var old = document.getElementById(m.id);
            if (old) { if (old.innerHTML !== m.innerHTML && !old.querySelector("details[open]")) old.innerHTML = m.innerHTML; return; }
            m.classList.add("sesh-new");
            chat.appendChild(document.importNode(m, true));
          });
          ["dl.sesh-facts", ".sesh-head h1"].forEach(function (sel) {
            var a = document.querySelector(sel), b = doc.querySelector(sel);
            if (a && b) a.innerHTML = b.innerHTML;
          });
          l.setAttribute("data-sesh-messages", doc.querySelector("[data-sesh-thread]").getAttribute("data-sesh-messages"));
        });
    }
    function tick() {
      if (busy || document.hidden) return;
      busy = true;
      fetch(url(), { credentials: "same-origin", cache: "no-store" }).then(function (r) { return r.ok ? r.json() : null; })
        .then(function (s) {
          if (!s) return;
          var jobs = [];
          if (version !== null && s.version !== version) {
            listDue = true;
            var l = layout();
            if (l && s.messages !== undefined) jobs.push(mergeThread());
          }
          if (listDue && Date.now() - listAt >= LIST_MS) {
            listDue = false;
            listAt = Date.now();
            if (side()) jobs.push(refreshSide(listParams()));
            else if (document.body.classList.contains("sesh-sessions-page")) jobs.push(refreshSessions());
          }
          version = s.version;
          return Promise.all(jobs);
        }).catch(function () {}).then(function () { busy = false; });
    }
    function refreshSessions() {  // the sessions table: swap its body and total
      return fetch(location.href, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          [".sesh-sessions tbody", ".sesh-total"].forEach(function (sel) {
            var a = document.querySelector(sel), b = doc.querySelector(sel);
            if (a && b) a.innerHTML = b.innerHTML;
          });
        });
    }
    return {
      start: function () { tick(); setInterval(tick, POLL_MS); },
      thread: function () { version = null; }
    };
  })();

  document.addEventListener("DOMContentLoaded", function () {
    addNavControls();
    var s = side(), cur = s && s.querySelector(".sesh-current");
    if (cur) s.scrollTop = Math.max(0, cur.offsetTop - s.offsetTop - s.clientHeight / 3);  // the open session in view
    followHash();
    if (document.body.classList.contains("sesh-thread-page") || document.body.classList.contains("sesh-sessions-page")) live.start();
  });
  window.addEventListener("hashchange", followHash);
})();
