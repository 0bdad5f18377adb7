// check.mjs draws Mermaid documents with Mermaid itself, for the Go tests
// of package graph (see TestMermaidWithMermaid). It reads a JSON array of
// documents on stdin and prints a JSON array with, per document, either
// {"error": message} or its nodes, by id, each with the text the drawing
// shows (lines separated by "\n"), its shape and its classes, and its
// edges.
//
// It renders in jsdom, with the securityLevel GitHub uses (strict), so the
// label text is the HTML Mermaid put in the SVG after its own entity,
// line-break, icon and sanitizing passes, read back as a browser would.
// jsdom has no layout: sizes are stubbed, which is enough to draw.
import { JSDOM } from 'jsdom';

const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
const { window } = dom;
for (const name of ['window', 'document', 'CSSStyleSheet', 'DOMParser', 'Element', 'HTMLElement', 'SVGElement']) {
  globalThis[name] = name === 'window' ? window : window[name];
}
const box = { x: 0, y: 0, width: 100, height: 20, top: 0, left: 0, right: 100, bottom: 20 };
window.SVGElement.prototype.getBBox = () => box;
window.SVGElement.prototype.getComputedTextLength = () => 100;
window.Element.prototype.getBoundingClientRect = () => box;

const { default: mermaid } = await import('mermaid');
mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });

// shown is the text a page shows for the HTML of a label.
function shown(html) {
  return html.split(/<br\s*\/?>/i).map((part) => {
    const el = document.createElement('span');
    el.innerHTML = part;
    return el.textContent;
  }).join('\n');
}

let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = [];
let n = 0;
for (const text of JSON.parse(input)) {
  try {
    const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
    const shapes = {};
    for (const v of diagram.db.getVertices().values()) shapes[v.id] = v.type;
    const edges = diagram.db.getEdges().map((e) => ({ from: e.start, to: e.end, stroke: e.stroke }));

    const id = `d${n++}`;
    const { svg } = await mermaid.render(id, text);
    const holder = document.createElement('div');
    holder.innerHTML = svg;
    const vertices = {};
    for (const g of holder.querySelectorAll('g.node')) {
      const m = new RegExp(`^${id}-flowchart-(.*)-\\d+$`).exec(g.id);
      if (!m) throw new Error(`node element with unexpected id ${g.id}`);
      const label = g.querySelector('.nodeLabel');
      vertices[m[1]] = {
        text: label ? shown(label.innerHTML) : null,
        shape: shapes[m[1]] ?? null,
        classes: [...g.classList].filter((c) => c !== 'node' && c !== 'default'),
      };
    }
    results.push({ vertices, edges });
  } catch (e) {
    results.push({ error: String((e && e.message) || e) });
  }
}
process.stdout.write(JSON.stringify(results));
