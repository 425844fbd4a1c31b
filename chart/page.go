package chart

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
)

// sections lays out every entry of a report; the charts are drawn here.
func sections(entries []Entry) ([]section, error) {
	out := make([]section, 0, len(entries))
	for _, e := range entries {
		s, err := sectionOf(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; }
td { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: bold; }
dd { margin: 0; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Sections}}<section>
<h2>{{.Title}}</h2>
<dl>
{{range .Facts}}<dt>{{.Key}}</dt><dd>{{.Value}}</dd>
{{end}}</dl>
{{range .Charts}}<figure>
{{.Inline}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{end}}{{range .Tables}}<table>
<caption>{{.Caption}}</caption>
<tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{end}}{{if .Notes}}<ul>
{{range .Notes}}<li>{{.}}</li>
{{end}}</ul>
{{end}}</section>
{{end}}</body>
</html>
`))

// Inline is the chart as an element of the page: the SVG without its XML
// prologue. The SVG is drawn by gonum/plot from numbers, with every text
// in it escaped, so it is trusted markup.
func (i image) Inline() template.HTML {
	svg := i.SVG
	if k := bytes.Index(svg, []byte("<svg")); k > 0 {
		svg = svg[k:]
	}
	return template.HTML(svg)
}

// WriteHTML writes a self-contained page: per document its facts, its
// charts inline as SVG, and its tables.
func WriteHTML(w io.Writer, title string, entries []Entry) error {
	secs, err := sections(entries)
	if err != nil {
		return err
	}
	return page.Execute(w, struct {
		Title    string
		Sections []section
	}{title, secs})
}

// WriteMarkdown writes the report as GitHub-flavoured Markdown. Charts go
// through saveImage, which stores the SVG and returns the link to it
// (relative to the Markdown file).
func WriteMarkdown(w io.Writer, title string, entries []Entry, saveImage func(name string, svg []byte) (string, error)) error {
	secs, err := sections(entries)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", mdText(title))
	for i, s := range secs {
		fmt.Fprintf(&b, "\n## %s\n\n", mdText(s.Title))
		for _, f := range s.Facts {
			fmt.Fprintf(&b, "- **%s**: %s\n", mdText(f.Key), mdText(f.Value))
		}
		for _, c := range s.Charts {
			link, err := saveImage(fmt.Sprintf("%d-%s", i+1, c.Name), c.SVG)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "\n![%s](%s)\n", mdText(c.Caption), link)
		}
		for _, t := range s.Tables {
			fmt.Fprintf(&b, "\n**%s**\n\n", mdText(t.Caption))
			mdRow(&b, t.Head)
			sep := make([]string, len(t.Head))
			for k := range sep {
				sep[k] = "---:"
			}
			fmt.Fprintf(&b, "|%s|\n", strings.Join(sep, "|"))
			for _, r := range t.Rows {
				mdRow(&b, r)
			}
		}
		if len(s.Notes) > 0 {
			b.WriteString("\n")
			for _, n := range s.Notes {
				fmt.Fprintf(&b, "- %s\n", mdText(n))
			}
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func mdRow(b *strings.Builder, cells []string) {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = strings.ReplaceAll(mdText(c), "|", `\|`)
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(esc, " | "))
}

// mdText keeps text from being read as Markdown markup.
var mdText = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "[", `\[`, "]", `\]`, "\n", " ").Replace

// File is one file of a rendered report: where it goes and what it holds.
type File struct {
	Path string
	Data []byte
}

// PageFormat is the kind of page a report file's extension asks for:
// "html" (.html, .htm) or "md" (.md), in any case.
func PageFormat(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".html", ".htm":
		return "html", nil
	case ".md":
		return "md", nil
	}
	return "", fmt.Errorf("%s: want a .html or .md file", path)
}

// Page renders the report for the page out (.html, .htm or .md) in
// memory, so that a failure leaves no file: for Markdown, an SVG file per
// chart beside the page (named after it), then the page itself, last.
func Page(out, title string, entries []Entry) ([]File, error) {
	format, err := PageFormat(out)
	if err != nil {
		return nil, err
	}
	var page bytes.Buffer
	var files []File
	if format == "md" {
		base := strings.TrimSuffix(out, filepath.Ext(out))
		save := func(name string, svg []byte) (string, error) {
			path := base + "-" + name + ".svg"
			files = append(files, File{path, svg})
			return filepath.Base(path), nil
		}
		err = WriteMarkdown(&page, title, entries, save)
	} else {
		err = WriteHTML(&page, title, entries)
	}
	if err != nil {
		return nil, err
	}
	return append(files, File{out, page.Bytes()}), nil
}
