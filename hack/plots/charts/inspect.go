package charts

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Contents is what an SVG document draws, as far as checks of a chart go.
type Contents struct {
	// Texts are the text elements' contents: the title, axis labels,
	// tick labels and legend entries.
	Texts []string
	// Paths counts the path elements: axes, ticks, grid lines, the
	// series' lines and marks.
	Paths int
}

// HasText reports whether a text element contains s.
func (c Contents) HasText(s string) bool {
	for _, t := range c.Texts {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// Inspect parses an SVG document as XML and returns its texts and paths;
// it fails if the document is not well-formed or its root is not svg.
func Inspect(r io.Reader) (Contents, error) {
	var c Contents
	dec := xml.NewDecoder(r)
	root := ""
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = t.Name.Local
			}
			switch t.Name.Local {
			case "path":
				c.Paths++
			case "text":
				inText = true
				c.Texts = append(c.Texts, "")
			}
		case xml.EndElement:
			if t.Name.Local == "text" {
				inText = false
			}
		case xml.CharData:
			if inText {
				c.Texts[len(c.Texts)-1] += string(t)
			}
		}
	}
	if root != "svg" {
		return c, fmt.Errorf("root element %q, want svg", root)
	}
	return c, nil
}
