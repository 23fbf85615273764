"""The HTML report in a real browser: headless Chromium loads it offline, every image shows, and
the interactive timelines render with no network and toggle their overlays.

Chromium prints the report to PDF; an image that loaded is embedded in the PDF
as an image object of its own pixel size, a broken one is replaced by the
browser's small broken-image icon.  So the check is: every ``<img>``'s PNG
size appears among the PDF's images.  A copy of the report with one image's
data corrupted is printed too, and must miss exactly that image (the check can
fail).

Uses a Chromium-family browser that is already installed: the one named by
``CTXREPLAY_BROWSER`` (a path or a command), else the first of chromium, chromium-browser,
google-chrome, google-chrome-stable found on PATH.  Without one the test is skipped with the
reason printed (``pytest -rs`` lists it); the test never installs anything.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from analysis.report.build import write_report
from replay.corpus import Corpus, replay_corpus
from replay.policy import load_policy
from tests.analysis.conftest import PRESETS, Replayed
from tests.analysis.report.report_html import ReportDoc, png_of, png_size

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--no-pdf-header-footer")
IMAGE_OBJECT = re.compile(rb"/Subtype\s*/Image\b(.*?)>>\s*stream", re.DOTALL)


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str:
    """An installed Chromium-family browser (``CTXREPLAY_BROWSER`` or PATH); skips without."""
    named = os.environ.get("CTXREPLAY_BROWSER")
    if named:
        path = shutil.which(named)
        if path is None:
            pytest.fail(f"CTXREPLAY_BROWSER={named!r} is not an executable browser")
        return path
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    reason = (f"no browser for the HTML report check: none of {', '.join(BROWSERS)} on PATH and "
              "CTXREPLAY_BROWSER unset (install Chromium, e.g. `apt-get install chromium`, or "
              "set CTXREPLAY_BROWSER=/path/to/chrome)")
    print(reason)
    pytest.skip(reason)


def print_to_pdf(browser: str, page: Path, tmp: Path) -> bytes:
    pdf = tmp / f"{page.stem}.pdf"
    cmd = [browser, *FLAGS, f"--user-data-dir={tmp / 'profile'}", f"--print-to-pdf={pdf}",
           page.resolve().as_uri()]
    res = subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    assert res.returncode == 0 and pdf.is_file(), res.stderr.decode(errors="replace")[-2000:]
    return pdf.read_bytes()


def pdf_image_sizes(pdf: bytes) -> Counter[tuple[int, int]]:
    sizes: Counter[tuple[int, int]] = Counter()
    for m in IMAGE_OBJECT.finditer(pdf):
        w = re.search(rb"/Width\s+(\d+)", m.group(1))
        h = re.search(rb"/Height\s+(\d+)", m.group(1))
        if w and h:
            sizes[(int(w.group(1)), int(h.group(1)))] += 1
    return sizes


def test_every_image_loads_in_headless_chromium(sample_corpus: Corpus,
                                                replayed: dict[str, Replayed],
                                                tmp_path: Path) -> None:
    browser = chromium()
    m = replayed[PRESETS[0]].metrics
    run_id = str(m[m["n_trims"] > 0].sort_values("n_requests", kind="stable")["run_id"].iloc[0])
    runs = []
    for name in PRESETS:
        policy = load_policy(name)
        runs.append((policy, replay_corpus(sample_corpus, policy, run_ids=[run_id])))
    files = write_report(sample_corpus, runs, tmp_path / "report")
    text = files.html.read_text()
    images = ReportDoc(text).images
    expected = Counter(png_size(png_of(img)) for img in images)
    assert sum(expected.values()) == 5  # the analyses; the timeline is interactive in the page

    loaded = pdf_image_sizes(print_to_pdf(browser, files.html, tmp_path))
    assert not expected - loaded, f"images missing in the browser: {expected - loaded}"

    src = images[-1]["src"]
    cut = src.index(",") + 1
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace(src, src[:cut] + "AAAA" + src[cut + 64:]))
    shown = pdf_image_sizes(print_to_pdf(browser, broken, tmp_path))
    assert expected - shown == Counter([png_size(png_of(images[-1]))])


PROBE = """<script>
(function () {
  function say(v) {
    const p = document.createElement("pre"); p.id = "probe"; p.textContent = JSON.stringify(v);
    document.body.appendChild(p);
  }
  let waited = 0;
  function check() {
    if (document.body.dataset.timelines !== "ready") {
      if ((waited += 50) > 20000) { say({error: "timelines never ready"}); return; }
      setTimeout(check, 50); return;
    }
    const doc = Bokeh.documents[Bokeh.documents.length - 1];
    const fig = document.querySelector("figure.timeline");
    const canvas = [];
    (function walk(node) {  // Bokeh draws inside nested shadow roots
      node.querySelectorAll("*").forEach(function (el) {
        if (el.tagName === "CANVAS") canvas.push(el);
        if (el.shadowRoot) walk(el.shadowRoot);
      });
    })(fig.querySelector("[id$=-plot]"));
    const r = (layer, p) => doc.get_model_by_name(fig.id + "|" + p + "|" + layer + "|" + p);
    const seen = () => [r("trims", 0).visible, r("truth", 0).visible, r("truth", 1).visible];
    const before = seen();
    fig.querySelector("input[data-layer=trims]").click();
    const trimsOff = seen();
    fig.querySelector("input[data-policy='1']").click();
    const policyOff = seen();
    fig.querySelector("input[data-layer=trims]").click();
    const trimsOn = seen();
    const fetched = performance.getEntriesByType("resource").map(e => e.name)
      .filter(n => !n.startsWith("data:"));
    say({before, trimsOff, policyOff, trimsOn, fetched,
         canvases: canvas.length, width: canvas.length ? canvas[0].width : 0});
  }
  check();
})();
</script>"""


def test_interactive_timeline_renders_offline_and_an_overlay_toggles(
        sample_corpus: Corpus, replayed: dict[str, Replayed], tmp_path: Path) -> None:
    browser = chromium()
    m = replayed[PRESETS[0]].metrics
    run_id = str(m[m["n_trims"] > 0].sort_values("n_requests", kind="stable")["run_id"].iloc[0])
    runs = [(load_policy(n), replay_corpus(sample_corpus, load_policy(n), run_ids=[run_id]))
            for n in PRESETS]
    files = write_report(sample_corpus, runs, tmp_path / "report", max_timelines=1)
    page = tmp_path / "probe.html"
    page.write_text(files.html.read_text().replace("</body>", PROBE + "</body>"))
    cmd = [browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
           "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",  # no network
           "--virtual-time-budget=30000", "--dump-dom", page.resolve().as_uri()]
    res = subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    dom = res.stdout.decode(errors="replace")
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, res.stderr.decode(errors="replace")[-2000:]
    probe = json.loads(html.unescape(found.group(1)))
    assert probe.get("error") is None, probe
    assert probe["fetched"] == [], probe  # nothing but the page itself
    assert probe["canvases"] >= 1 and probe["width"] > 0, probe
    assert probe["before"] == [True, True, True]
    assert probe["trimsOff"] == [False, True, True]  # the trims layer hides, the lines stay
    assert probe["policyOff"] == [False, True, False]  # the second policy hides
    assert probe["trimsOn"] == [True, True, False]
