// Live refresh: a <main data-refresh="N"> page re-reads itself every N seconds and swaps in
// the new <main>, unless the user is typing in one of its forms.
(function () {
  const main = document.querySelector("main[data-refresh]");
  if (!main) return;
  const seconds = Number(main.dataset.refresh);
  async function refresh() {
    const active = document.activeElement;
    if (active && main.contains(active) && /INPUT|TEXTAREA|SELECT/.test(active.tagName)) return;
    try {
      const response = await fetch(location.href, {headers: {"Accept": "text/html"}});
      if (!response.ok) return;
      const doc = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = doc.querySelector("main");
      if (fresh) main.innerHTML = fresh.innerHTML;
    } catch (e) { /* the next tick tries again */ }
  }
  setInterval(refresh, seconds * 1000);
})();
