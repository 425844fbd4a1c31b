package chart

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chartProbe, added before </body>, has the browser write every chart's
// drawn size and path count into the page, which --dump-dom prints.
const chartProbe = `<script>document.body.setAttribute("data-charts", JSON.stringify([...document.querySelectorAll("svg")].map(s => { const b = s.getBoundingClientRect(); return [Math.round(b.width), Math.round(b.height), s.querySelectorAll("path").length]; })));</script>`

var chartsDrawn = regexp.MustCompile(`data-charts="([^"]*)"`)

// chromium finds Debian's chromium, which .ci/run installs; without it
// the test is skipped outside CI.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is missing; .ci/run installs it")
		}
		t.Skip("chromium not installed")
	}
	return path
}

// runChromium runs headless Chromium on a page and returns its standard
// output and error.
func runChromium(t *testing.T, bin string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=3000", "--user-data-dir=" + t.TempDir()}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// The HTML report opens in a real browser (Debian's headless Chromium)
// with no console message (no script error, no SVG attribute it could not
// read), every chart drawn at its size with its lines, and a screenshot
// kept (go test ./chart -run Browser -artifacts keeps it).
func TestReportInABrowser(t *testing.T) {
	bin := chromium(t)
	entries := []Entry{{Name: "allreduce", Doc: load(t, "allreduce")}, {Name: "profile", Doc: load(t, "profile")}}
	var page bytes.Buffer
	if err := WriteHTML(&page, "collbench report", entries); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report, probed := filepath.Join(dir, "report.html"), filepath.Join(dir, "probed.html")
	if err := os.WriteFile(report, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probed, []byte(strings.Replace(page.String(), "</body>", chartProbe+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, log := runChromium(t, bin, "--dump-dom", "file://"+probed)
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("the browser's console: %s", line)
		}
	}
	m := chartsDrawn.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe did not run: no data-charts in the page\n%s", log)
	}
	var charts [][3]int
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &charts); err != nil {
		t.Fatalf("data-charts %q: %v", m[1], err)
	}
	if len(charts) != 3 {
		t.Errorf("%d charts drawn, want 3 (the run, and the profile's allreduce and allgather)", len(charts))
	}
	for i, c := range charts {
		if c[0] < 200 || c[1] < 200 || c[2] < 10 {
			t.Errorf("chart %d drawn %d×%d px with %d paths; want a drawn chart", i+1, c[0], c[1], c[2])
		}
	}
	shot := filepath.Join(t.ArtifactDir(), "report.png")
	runChromium(t, bin, "--window-size=1280,2600", "--screenshot="+shot, "file://"+report)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() != 1280 {
		t.Fatalf("screenshot %s: %v, %v", shot, err, img.Bounds())
	}
	t.Logf("charts drawn (width, height, paths): %v; screenshot %s", charts, shot)
}
