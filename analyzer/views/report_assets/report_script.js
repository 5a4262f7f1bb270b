// spmdsim report page: the interactive memory view, sortable and filterable tables, RNG groups,
// the process view and position links (docs/REPORT_PAGE.md). Plain JavaScript, no network; the
// data is each module's JSON block (class "memview-data"). This text is inlined into the page's
// script element: it must never hold that element's end tag or markup.
"use strict";
(function () {
  const COLORS = {
    "parameters": "#7d9bc7",
    "outputs": "#9ccfa3",
    "collective buffers": "#c99be0",
    "other temp": "#c9ced8",
    "random bits": "#e8913a",
  };
  const MAX_ROWS = 200;
  const UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

  // As spmdsim's HumanBytes: "2.84 MiB", "512 B".
  function humanBytes(bytes) {
    const magnitude = Math.abs(bytes);
    if (magnitude < 1024) return bytes + " B";
    let value = magnitude / 1024;
    let unit = 0;
    while (value >= 1024 && unit + 1 < UNITS.length) {
      value /= 1024;
      unit++;
    }
    return (bytes < 0 ? "-" : "") + value.toFixed(2) + " " + UNITS[unit];
  }

  function cell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  // ---- the memory view ----

  class MemoryView {
    constructor(root) {
      this.root = root;
      this.data = JSON.parse(root.querySelector("script.memview-data").textContent);
      this.canvas = root.querySelector("canvas.memview-curve");
      this.table = root.querySelector("table.memview-live");
      this.positions = this.data.positions;
      this.first = 0;
      this.last = this.positions - 1;
      this.pinned = false;
      this.selected = Number(root.dataset.selected);
      this.prepare();
      this.legend();
      this.listen();
      const staticCurve = root.parentElement.querySelector("svg.curve");
      if (staticCurve) staticCurve.style.display = "none";
      this.draw();
      this.show(this.selected);
    }

    // Per category, the live bytes at every position (prefix sums of the stays), and the total.
    prepare() {
      const n = this.positions;
      const cats = this.data.categories.length;
      this.byCategory = [];
      for (let c = 0; c < cats; c++) this.byCategory.push(new Float64Array(n + 1));
      const other = this.data.categories.indexOf("other temp");
      for (const b of this.data.buffers) {
        const series = this.byCategory[b[3]];
        series[b[0]] += b[2];
        series[b[1] + 1] -= b[2];
      }
      this.total = new Float64Array(n);
      for (let c = 0; c < cats; c++) {
        const series = this.byCategory[c];
        let running = 0;
        for (let p = 0; p < n; p++) {
          running += series[p];
          series[p] = running;
        }
      }
      // Tuple tables are live throughout and listed under no buffer: part of "other temp".
      for (let p = 0; p < n; p++) {
        if (other >= 0) this.byCategory[other][p] += this.data.tuple_table_bytes;
        let sum = 0;
        for (let c = 0; c < cats; c++) sum += this.byCategory[c][p];
        this.total[p] = sum;
      }
      // The buffers by first position, for listing one position.
      this.buffers = this.data.buffers;
    }

    legend() {
      const legend = this.root.querySelector(".memview-legend");
      for (const name of this.data.categories) {
        const item = document.createElement("span");
        item.className = "memview-swatch";
        item.dataset.category = name;
        const box = document.createElement("i");
        box.style.background = COLORS[name] || "#999";
        item.appendChild(box);
        item.appendChild(document.createTextNode(name));
        legend.appendChild(item);
      }
    }

    // The canvas's drawing area in CSS pixels.
    area() {
      const rect = this.canvas.getBoundingClientRect();
      return { left: 64, right: rect.width - 12, top: 12, bottom: rect.height - 26, rect: rect };
    }

    positionAt(clientX) {
      const a = this.area();
      const x = clientX - a.rect.left;
      const span = this.last - this.first + 1;
      const fraction = (x - a.left) / (a.right - a.left);
      const p = this.first + Math.floor(fraction * span);
      return Math.max(this.first, Math.min(this.last, p));
    }

    xOf(position, a) {
      const span = this.last - this.first + 1;
      return a.left + ((position - this.first + 0.5) / span) * (a.right - a.left);
    }

    draw() {
      const canvas = this.canvas;
      const rect = canvas.getBoundingClientRect();
      const ratio = window.devicePixelRatio || 1;
      canvas.width = Math.max(1, Math.round(rect.width * ratio));
      canvas.height = Math.max(1, Math.round(rect.height * ratio));
      const g = canvas.getContext("2d");
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      g.clearRect(0, 0, rect.width, rect.height);
      const a = this.area();
      const width = Math.max(1, Math.floor(a.right - a.left));
      let top = this.data.peak_bytes;
      for (let p = this.first; p <= this.last; p++) top = Math.max(top, this.total[p]);
      const usable = this.data.usable_bytes;
      if (usable && usable <= 1.5 * top) top = Math.max(top, usable);
      top = top > 0 ? top * 1.05 : 1;
      const y = (bytes) => a.bottom - (bytes / top) * (a.bottom - a.top);
      // Grid and axis.
      g.font = "11px system-ui, sans-serif";
      g.fillStyle = "#5b6475";
      g.strokeStyle = "#e3e7ee";
      for (let k = 0; k <= 4; k++) {
        const bytes = (top / 1.05) * (k / 4);
        const yy = Math.round(y(bytes)) + 0.5;
        g.beginPath();
        g.moveTo(a.left, yy);
        g.lineTo(a.right, yy);
        g.stroke();
        g.fillText(humanBytes(Math.round(bytes)), 2, yy + 4);
      }
      g.fillText(String(this.first), a.left, a.bottom + 16);
      const lastLabel = String(this.last);
      g.fillText(lastLabel, a.right - g.measureText(lastLabel).width, a.bottom + 16);
      // The stacked curve: per pixel column, the position of its stretch with the most bytes.
      const span = this.last - this.first + 1;
      const cats = this.data.categories.length;
      for (let x = 0; x < width; x++) {
        const from = this.first + Math.floor((x / width) * span);
        const to = Math.max(from, this.first + Math.floor(((x + 1) / width) * span) - 1);
        let best = from;
        for (let p = from; p <= to && p <= this.last; p++) {
          if (this.total[p] > this.total[best]) best = p;
        }
        let base = 0;
        for (let c = 0; c < cats; c++) {
          const bytes = this.byCategory[c][best];
          if (bytes <= 0) continue;
          g.fillStyle = COLORS[this.data.categories[c]] || "#999";
          const y0 = y(base);
          const y1 = y(base + bytes);
          g.fillRect(a.left + x, y1, 1, Math.max(0.5, y0 - y1));
          base += bytes;
        }
      }
      // The predicted peak (with what packing loses), the device's usable memory.
      const line = (bytes, color, label) => {
        const yy = Math.round(y(bytes)) + 0.5;
        g.strokeStyle = color;
        g.setLineDash([5, 4]);
        g.beginPath();
        g.moveTo(a.left, yy);
        g.lineTo(a.right, yy);
        g.stroke();
        g.setLineDash([]);
        g.fillStyle = color;
        g.fillText(label, a.left + 4, yy - 3);
      };
      line(this.data.peak_bytes, "#b3261e", "predicted peak " + humanBytes(this.data.peak_bytes));
      if (usable && usable <= top) {
        line(usable, "#1d2330", (this.data.device || "device") + " can hold " + humanBytes(usable));
      }
      // The selected position.
      if (this.selected >= this.first && this.selected <= this.last) {
        const xx = Math.round(this.xOf(this.selected, a)) + 0.5;
        g.strokeStyle = this.pinned ? "#1d2330" : "#2f65a7";
        g.beginPath();
        g.moveTo(xx, a.top);
        g.lineTo(xx, a.bottom);
        g.stroke();
      }
      g.strokeStyle = "#5b6475";
      g.strokeRect(a.left + 0.5, a.top + 0.5, a.right - a.left, a.bottom - a.top);
      if (this.dragFrom !== undefined && this.dragTo !== undefined) {
        g.fillStyle = "rgba(47,101,167,0.15)";
        const x0 = Math.min(this.dragFrom, this.dragTo) - a.rect.left;
        const x1 = Math.max(this.dragFrom, this.dragTo) - a.rect.left;
        g.fillRect(x0, a.top, x1 - x0, a.bottom - a.top);
      }
      this.root.dataset.first = this.first;
      this.root.dataset.last = this.last;
    }

    // What is live at `position`: largest first, ties by instruction then index (as analyze).
    liveAt(position) {
      const live = [];
      for (const b of this.buffers) {
        if (b[0] > position) break;
        if (b[1] >= position) live.push(b);
      }
      const s = this.data.strings;
      live.sort((x, y) => {
        if (x[2] !== y[2]) return y[2] - x[2];
        const xi = s[x[4]], yi = s[y[4]];
        if (xi !== yi) return xi < yi ? -1 : 1;
        const xk = s[x[5]], yk = s[y[5]];
        return xk < yk ? -1 : xk > yk ? 1 : 0;
      });
      return live;
    }

    show(position) {
      this.selected = position;
      this.root.dataset.selected = position;
      const s = this.data.strings;
      const live = this.liveAt(position);
      this.root.querySelector(".memview-position").textContent = String(position);
      this.root.querySelector(".memview-instruction").textContent =
        this.data.instructions[position] + " (" + this.data.opcodes[this.data.opcode_at[position]] + ")";
      let bytes = this.data.base_bytes;
      for (const b of live) if (s[b[7]].startsWith("temp")) bytes += b[2];
      const total = this.root.querySelector(".memview-total");
      total.textContent = humanBytes(bytes);
      total.dataset.bytes = String(bytes);
      total.title = bytes + " bytes";
      this.root.querySelector(".memview-count").textContent = String(live.length);
      this.root.querySelector(".memview-pinned").textContent = this.pinned ? "(pinned: click the curve to unpin)" : "";
      const body = this.table.tBodies[0];
      const rows = document.createDocumentFragment();
      const shown = Math.min(MAX_ROWS, live.length);
      for (let i = 0; i < shown; i++) {
        const b = live[i];
        const tr = document.createElement("tr");
        tr.dataset.bytes = String(b[2]);
        tr.dataset.instruction = s[b[4]];
        tr.dataset.index = s[b[5]];
        tr.dataset.category = this.data.categories[b[3]];
        const size = cell(tr, humanBytes(b[2]), "num");
        size.dataset.sort = String(b[2]);
        size.title = b[2] + " bytes";
        const category = cell(tr, "", "");
        const box = document.createElement("i");
        box.className = "memview-box";
        box.style.background = COLORS[tr.dataset.category] || "#999";
        category.appendChild(box);
        category.appendChild(document.createTextNode(tr.dataset.category));
        cell(tr, s[b[4]] + (s[b[5]] === "{}" ? "" : s[b[5]]), "code");
        cell(tr, s[b[6]] + " (" + s[b[7]] + ")");
        cell(tr, s[b[8]], "shape");
        cell(tr, s[b[9]], "long");
        cell(tr, s[b[10]], "long");
        rows.appendChild(tr);
      }
      body.replaceChildren(rows);
      this.table.dataset.count = String(live.length);
      for (const th of this.table.tHead.rows[0].cells) th.removeAttribute("aria-sort");
      applyFilter(this.table);
      let rest = 0;
      for (let i = shown; i < live.length; i++) rest += live[i][2];
      this.root.querySelector(".memview-more").textContent =
        live.length > shown ? "... " + (live.length - shown) + " more buffers, " + humanBytes(rest) + " together." : "";
      this.draw();
    }

    zoom(first, last) {
      this.first = Math.max(0, Math.min(first, this.positions - 1));
      this.last = Math.max(this.first, Math.min(last, this.positions - 1));
      this.draw();
    }

    listen() {
      const c = this.canvas;
      c.addEventListener("mousemove", (e) => {
        if (this.dragFrom !== undefined && e.buttons & 1) {
          this.dragTo = e.clientX;
          this.draw();
          return;
        }
        if (!this.pinned) this.show(this.positionAt(e.clientX));
      });
      c.addEventListener("mousedown", (e) => {
        this.dragFrom = e.clientX;
        this.dragTo = undefined;
      });
      c.addEventListener("mouseup", (e) => {
        const from = this.dragFrom;
        this.dragFrom = undefined;
        this.dragTo = undefined;
        if (from !== undefined && Math.abs(e.clientX - from) > 5) {
          const a = this.positionAt(Math.min(from, e.clientX));
          const b = this.positionAt(Math.max(from, e.clientX));
          this.zoom(a, b);
          return;
        }
        this.pinned = !this.pinned;
        this.show(this.positionAt(e.clientX));
      });
      c.addEventListener("wheel", (e) => {
        e.preventDefault();
        const at = this.positionAt(e.clientX);
        const factor = Math.pow(1.0015, e.deltaY);
        const span = this.last - this.first + 1;
        const next = Math.max(8, Math.min(this.positions, Math.round(span * factor)));
        const before = (at - this.first) / span;
        const first = Math.round(at - before * next);
        this.zoom(first, first + next - 1);
      }, { passive: false });
      this.root.querySelector("button.memview-reset").addEventListener("click", () => this.zoom(0, this.positions - 1));
      this.root.querySelector("button.memview-peak").addEventListener("click", () => this.select(Number(this.root.dataset.peakPosition)));
      window.addEventListener("resize", () => this.draw());
    }

    // Shows `position` pinned, zoomed out if it is outside the visible range.
    select(position) {
      if (!(position >= 0 && position < this.positions)) return;
      if (position < this.first || position > this.last) this.zoom(0, this.positions - 1);
      this.pinned = true;
      this.show(position);
    }
  }

  // ---- tables ----

  // Rows that belong to the row before them (members of an RNG group, sub-rows).
  function attached(row) {
    return row.classList.contains("rng-member") || row.classList.contains("sub");
  }

  function sortValue(row, column) {
    const td = row.cells[column];
    if (!td) return "";
    if (td.dataset.sort !== undefined) return Number(td.dataset.sort);
    const text = td.textContent.trim();
    return /^-?[\d.,]+$/.test(text) ? Number(text.replace(/,/g, "")) : text.toLowerCase();
  }

  function sortTable(table, column, th) {
    // First click: numbers largest first, text A to Z; again: the other way.
    const current = th.getAttribute("aria-sort");
    const firstRow = table.tBodies[0].rows[0];
    const numeric = firstRow !== undefined && typeof sortValue(firstRow, column) === "number";
    const descending = current ? current === "ascending" : numeric;
    for (const other of th.parentElement.cells) other.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    const body = table.tBodies[0];
    const groups = [];
    for (const row of Array.from(body.rows)) {
      if (row.classList.contains("total")) continue;
      if (attached(row) && groups.length) groups[groups.length - 1].push(row);
      else groups.push([row]);
    }
    const totals = Array.from(body.rows).filter((r) => r.classList.contains("total"));
    groups.sort((a, b) => {
      const x = sortValue(a[0], column), y = sortValue(b[0], column);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    const fragment = document.createDocumentFragment();
    for (const group of groups) for (const row of group) fragment.appendChild(row);
    for (const row of totals) fragment.appendChild(row);
    body.appendChild(fragment);
  }

  function applyFilter(table) {
    const input = document.querySelector('input.table-filter[data-for="' + table.id + '"]');
    const query = input ? input.value.trim().toLowerCase() : "";
    let shown = 0;
    let keep = true;
    for (const row of table.tBodies[0].rows) {
      if (!attached(row)) {
        keep = !query || row.textContent.toLowerCase().includes(query) || memberText(row).includes(query);
        if (keep && !row.classList.contains("total")) shown++;
      }
      row.classList.toggle("filtered-out", !keep);
    }
    table.dataset.shown = String(shown);
  }

  function memberText(row) {
    let text = "";
    for (let next = row.nextElementSibling; next && attached(next); next = next.nextElementSibling) text += next.textContent.toLowerCase();
    return text;
  }

  function setUpTables() {
    for (const table of document.querySelectorAll("table.sortable")) {
      if (!table.tHead) continue;
      const ths = table.tHead.rows[0].cells;
      for (let i = 0; i < ths.length; i++) {
        ths[i].classList.add("sorts");
        ths[i].title = "sort by this column";
        ths[i].addEventListener("click", () => sortTable(table, i, ths[i]));
      }
    }
    for (const input of document.querySelectorAll("input.table-filter")) {
      const table = document.getElementById(input.dataset.for);
      if (!table) continue;
      input.addEventListener("input", () => applyFilter(table));
      applyFilter(table);
    }
    for (const group of document.querySelectorAll("tr.rng-group")) {
      group.addEventListener("click", () => {
        const open = !group.classList.contains("open");
        group.classList.toggle("open", open);
        for (let next = group.nextElementSibling; next && next.classList.contains("rng-member"); next = next.nextElementSibling) {
          next.classList.toggle("collapsed", !open);
        }
      });
    }
  }

  // ---- modules ----

  const views = new Map();

  function selectModule(index) {
    for (const section of document.querySelectorAll("section.module")) {
      const selected = section.dataset.moduleIndex === String(index);
      section.classList.toggle("hidden-module", !selected);
      if (selected) {
        const root = section.querySelector("div.memview");
        if (root && !views.has(root)) views.set(root, new MemoryView(root));
        else if (root) views.get(root).draw();
      }
    }
    for (const row of document.querySelectorAll("section.process tr[data-module-index]")) {
      row.classList.toggle("selected", row.dataset.moduleIndex === String(index));
    }
  }

  function setUpModules() {
    const rows = document.querySelectorAll("section.process tr[data-module-index]");
    for (const row of rows) {
      row.addEventListener("click", () => selectModule(row.dataset.moduleIndex));
    }
    const selected = document.querySelector("section.process tr.selected") || rows[0];
    if (selected) selectModule(selected.dataset.moduleIndex);
    else {
      for (const root of document.querySelectorAll("div.memview")) views.set(root, new MemoryView(root));
    }
    for (const link of document.querySelectorAll("a.show-position")) {
      link.addEventListener("click", (e) => {
        e.preventDefault();
        const section = link.closest("section.module");
        const root = section && section.querySelector("div.memview");
        if (!root || !views.has(root)) return;
        views.get(root).select(Number(link.dataset.position));
        root.scrollIntoView({ block: "center" });
      });
    }
  }

  document.documentElement.classList.add("scripted");
  setUpTables();
  setUpModules();
})();
