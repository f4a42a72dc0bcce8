"""The first screen of a report.html, as a newcomer sees it: screenshots in headless Chromium (Debian's, make
setup) at a desktop's width and a phone's, for docs/figures/ (issue 97).

    .venv/bin/python scripts/report_screens.py RESULTS_DIR OUT_PREFIX      # OUT_PREFIX-1280.png, -390.png
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

WIDTHS = {1280: 900, 390: 844}  # viewport width: its height (a laptop; an iPhone 12-15)


def screens(report: Path, prefix: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            for width, height in WIDTHS.items():
                page = browser.new_page(viewport={"width": width, "height": height})
                page.goto(report.resolve().as_uri(), wait_until="load")
                shot = prefix.with_name(f"{prefix.name}-{width}.png")
                page.screenshot(path=str(shot))  # the first screen only: what is read before scrolling
                out.append(shot)
                page.close()
        finally:
            browser.close()
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for p in screens(Path(sys.argv[1]) / "report.html", Path(sys.argv[2])):
        print(p)
