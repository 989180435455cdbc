// The Analytics page's charts, drawn with uPlot (served from the gateway: /dashboard/assets/uplot.js,
// loaded before this script). The figures come from the page itself (#analytics-charts'
// data-analytics, the same rows as its table, which stays the data for anyone without the charts):
// calls per bucket (with errors, or one series per group) and latency (p50 and p95, or each
// group's p95). Buckets without calls are drawn as zero calls and no latency. No framework, no build.

(() => {
  const holder = document.getElementById("analytics-charts");
  if (!holder || !window.uPlot) return;
  const data = JSON.parse(holder.getAttribute("data-analytics"));
  // Every bucket of the range, in seconds (uPlot's time scale).
  const times = [];
  for (let t = data.from; t < data.to; t += data.unit) times.push(t / 1000);
  const index = new Map(times.map((t, i) => [t * 1000, i]));
  const COLOURS = [
    "#2456c7",
    "#c62828",
    "#1a7f37",
    "#8250df",
    "#b76e00",
    "#0e7490",
    "#be185d",
    "#4d7c0f",
  ];

  // One series per label, each a value per bucket (`empty` where the bucket has no row).
  function seriesOf(pick, empty) {
    const labels = [...new Set(data.rows.map((row) => row.label))];
    return labels.map((label) => {
      const values = times.map(() => empty);
      for (const row of data.rows)
        if (row.label === label) values[index.get(row.bucket)] = pick(row);
      return { label, values };
    });
  }

  const width = () => Math.max(280, holder.clientWidth);

  function chart(title, description, unit, lines) {
    const figure = document.createElement("figure");
    figure.className = "chart";
    const caption = document.createElement("figcaption");
    caption.textContent = title;
    // The canvas is a picture of the table below: named for screen readers, not a second table.
    const plot = document.createElement("div");
    plot.setAttribute("role", "img");
    plot.setAttribute("aria-label", description);
    figure.append(caption, plot);
    holder.append(figure);
    const made = new uPlot(
      {
        width: width(),
        height: 240,
        series: [
          {},
          ...lines.map((line, i) => ({
            label: line.label,
            stroke: COLOURS[i % COLOURS.length],
            width: 2,
            spanGaps: false,
            // A bucket's point is drawn even when its neighbours have no value (latency).
            points: { show: true, size: 5 },
            value: (_u, v) => (v == null ? "—" : `${v}${unit}`),
          })),
        ],
        axes: [{}, { size: 64, values: (_u, ticks) => ticks.map((v) => `${v}${unit}`) }],
        scales: { x: { time: true } },
        // The axis in UTC, as the table and the API's buckets.
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        legend: { live: false },
      },
      [times, ...lines.map((line) => line.values)],
      plot,
    );
    window.addEventListener("resize", () => made.setSize({ width: width(), height: 240 }));
  }

  if (data.grouped) {
    chart(
      "Calls",
      "Line chart of calls per bucket, one line per group; the table below holds the same figures.",
      "",
      seriesOf((row) => row.calls, 0),
    );
    chart(
      "Latency p95",
      "Line chart of each group's 95th-percentile latency per bucket, in milliseconds; the table below holds the same figures.",
      " ms",
      seriesOf((row) => row.latencyP95Ms, null),
    );
  } else {
    const [calls] = seriesOf((row) => row.calls, 0);
    const [errors] = seriesOf((row) => row.errors, 0);
    const [p50] = seriesOf((row) => row.latencyP50Ms, null);
    const [p95] = seriesOf((row) => row.latencyP95Ms, null);
    const none = times.map(() => 0);
    chart(
      "Calls and errors",
      "Line chart of calls and errors per bucket; the table below holds the same figures.",
      "",
      [
        { label: "Calls", values: calls ? calls.values : none },
        { label: "Errors", values: errors ? errors.values : none },
      ],
    );
    chart(
      "Latency",
      "Line chart of the median and 95th-percentile latency per bucket, in milliseconds; the table below holds the same figures.",
      " ms",
      [
        { label: "p50", values: p50 ? p50.values : times.map(() => null) },
        { label: "p95", values: p95 ? p95.values : times.map(() => null) },
      ],
    );
  }
  holder.setAttribute("data-drawn", "true");
})();
