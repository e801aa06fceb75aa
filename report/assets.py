"""The report's own style and script, inline in every report (allowed by their hashes: report/html.py).
The script only opens and closes sections and marks the page ready; it reads nothing from the documents."""

STYLE = """
:root { --ink: #1d232b; --muted: #5b6573; --line: #d9dee5; --soft: #f4f6f9; --accent: #3b6ea8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--soft); }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .facts { color: var(--muted); font-size: 12.5px; }
header .facts span { margin-right: 14px; unicode-bidi: isolate; }
nav { padding: 8px 28px; border-bottom: 1px solid var(--line); position: sticky; top: 0; background: #fff; z-index: 2; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; }
nav .buttons { float: right; }
nav button { margin-left: 6px; font-size: 12px; }
main { padding: 8px 28px 40px; max-width: 1400px; }
h2 { margin: 28px 0 6px; font-size: 18px; border-bottom: 2px solid var(--accent); padding-bottom: 3px; }
h2 small, h3 small { color: var(--muted); font-weight: normal; font-size: 12px; }
h3 { margin: 18px 0 6px; font-size: 15px; }
h4 { margin: 12px 0 4px; font-size: 13px; color: var(--muted); }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top;
         unicode-bidi: isolate; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: var(--soft); font-weight: 600; }
.note { color: var(--muted); font-size: 12.5px; margin: 4px 0 8px; }
details.reason { border: 1px solid var(--line); border-radius: 4px; margin: 5px 0; }
details.reason > summary { cursor: pointer; padding: 5px 8px; background: var(--soft); list-style-position: inside; }
details.reason > summary .name { font-family: ui-monospace, monospace; font-weight: 600; display: inline-block;
  min-width: 24em; }
details.reason > summary .count { display: inline-block; min-width: 6em; text-align: right; }
details.reason > summary .share { display: inline-block; min-width: 5em; text-align: right; color: var(--muted);
  margin: 0 10px; }
details.reason > .inner { padding: 6px 10px; }
.doc { border: 1px solid var(--line); border-radius: 4px; margin: 8px 0; background: #fff; overflow: hidden; }
.doc .head { padding: 4px 8px; background: var(--soft); font-size: 12.5px; border-bottom: 1px solid var(--line); }
.doc .head code { font-weight: 600; unicode-bidi: isolate; word-break: break-all; }
.doc .head .field { margin-left: 12px; color: var(--muted); unicode-bidi: isolate; }
.doc .head .field b { color: var(--ink); font-weight: 600; }
pre.text { margin: 0; padding: 8px 10px; white-space: pre-wrap; overflow-wrap: anywhere;
  max-height: 22em; overflow: auto; unicode-bidi: isolate;
  font: 12.5px/1.45 ui-monospace, "SFMono-Regular", Menlo, monospace; }
mark { padding: 0 1px; }
mark.span { background: #f7b2b2; }
mark.window { background: #fde4c4; }
mark.pii { background: #c9e3ff; }
mark.changed { background: #d8f0c8; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.pair > div > h4 { margin-top: 4px; }
details.cluster, details.item { border-left: 3px solid var(--accent); padding-left: 10px; margin: 10px 0; }
details.item { border-left-color: #d0813a; }
details.cluster > summary, details.item > summary { cursor: pointer; font-weight: 600; padding: 3px 0; }
.pair > div > .doc:first-child { margin-top: 0; }
pre.settings { background: var(--soft); padding: 10px; max-height: 40em; overflow: auto; font-size: 12px; }
svg.plot { display: block; margin: 6px 0 10px; font-size: 11px; font-family: system-ui, sans-serif; }
svg.share { vertical-align: middle; }
.legend mark { margin-right: 10px; }
"""

SCRIPT = """
(function () {
  function all(open) {
    document.querySelectorAll("details").forEach(function (d) { d.open = open; });
  }
  var expand = document.getElementById("expand-all");
  var collapse = document.getElementById("collapse-all");
  if (expand) { expand.addEventListener("click", function () { all(true); }); }
  if (collapse) { collapse.addEventListener("click", function () { all(false); }); }
  document.body.setAttribute("data-report-ready", "1");
})();
"""
