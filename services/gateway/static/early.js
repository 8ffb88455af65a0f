// Runs before the page paints: pages style themselves for script-enhanced use
// (one chunk detail at a time) only when scripts run.
document.documentElement.classList.add("js");
