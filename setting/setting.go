// Package setting lets a library refuse a setting by its name and each
// front end say that name its own way: a Go program reads the field's
// name, the command line its flag. Libraries write {Name} where a message
// names a setting; nothing in them spells a flag.
package setting

import (
	"fmt"
	"regexp"
	"strings"
)

// Error is a message that names settings. Error renders each {Name} as
// the name; Spell renders it as a front end calls it.
type Error struct {
	raw     string  // formatted, with the {Name} marks kept
	wrapped []error // what %w wrapped
}

// Errorf formats an error whose format names settings as {Name}. An
// argument that is itself an *Error keeps its marks, so that the whole
// message is spelled alike; %w wraps as fmt.Errorf does.
func Errorf(format string, a ...any) error {
	args := make([]any, len(a))
	for i, v := range a {
		args[i] = v
		if e, ok := v.(*Error); ok {
			args[i] = marked{e}
		}
	}
	e := fmt.Errorf(format, args...)
	out := &Error{raw: e.Error()}
	switch w := e.(type) {
	case interface{ Unwrap() error }:
		out.wrapped = []error{w.Unwrap()}
	case interface{ Unwrap() []error }:
		out.wrapped = w.Unwrap()
	}
	for i, w := range out.wrapped {
		if m, ok := w.(marked); ok {
			out.wrapped[i] = m.e
		}
	}
	return out
}

// marked formats an *Error with its marks, as the raw text of a message
// that includes it.
type marked struct{ e *Error }

func (m marked) Error() string { return m.e.raw }
func (m marked) Unwrap() error { return m.e }

var mark = regexp.MustCompile(`\{([A-Z][A-Za-z0-9]*)\}`)

// Error renders the message with each setting as its name.
func (e *Error) Error() string { return e.Spell(func(name string) string { return name }) }

// Unwrap is what the message wraps (%w), if anything.
func (e *Error) Unwrap() []error { return e.wrapped }

// Spell renders the message with each setting as spell calls it.
func (e *Error) Spell(spell func(name string) string) string { return Marks(e.raw, spell) }

// Spell renders err's text with every setting that a message in its
// chain names spelled by spell: the part each message contributes is
// found in the text as it renders for a Go program and replaced, and a
// mark that other errors carried as it is, {Name}, is spelled too.
func Spell(err error, spell func(name string) string) string {
	text := err.Error()
	var walk func(error)
	walk = func(err error) {
		for err != nil {
			if e, ok := err.(*Error); ok {
				if plain := e.Error(); plain != "" {
					text = strings.ReplaceAll(text, plain, e.Spell(spell))
				}
			}
			switch u := err.(type) {
			case interface{ Unwrap() []error }:
				for _, inner := range u.Unwrap() {
					walk(inner)
				}
				return
			case interface{ Unwrap() error }:
				err = u.Unwrap()
			default:
				return
			}
		}
	}
	walk(err)
	return Marks(text, spell)
}

// Marks spells the {Name} marks of a text, such as a line a library
// hands to a front end to print.
func Marks(text string, spell func(name string) string) string {
	return mark.ReplaceAllStringFunc(text, func(m string) string { return spell(m[1 : len(m)-1]) })
}
