package run

import (
	"fmt"
	"time"

	"github.com/collbench/collbench/setting"
)

// UsageError marks a failure caused by what the caller asked for (a bad
// setting, an impossible combination), as opposed to one found while
// measuring. The command line exits 2 on it.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef formats a UsageError; its format names settings as {Name}
// (setting.Errorf), never as a flag.
func Usagef(format string, a ...any) error { return UsageError{setting.Errorf(format, a...)} }

// StartTimeout is a start-up step that did not finish within the job's
// start-up deadline (-T, or the default); it counts as a timeout.
type StartTimeout struct {
	What  string
	After time.Duration
	Err   error
}

func (e *StartTimeout) Error() string {
	return setting.Errorf("%s did not finish within the start-up deadline of %v ({Timeout} sets it): %v", e.What, e.After, e.Err).Error()
}
func (e *StartTimeout) Unwrap() error { return e.Err }

// jobError is a local failure explained by the job's.
type jobError struct{ cause, local error }

func (e *jobError) Error() string   { return fmt.Sprintf("%v; here: %v", e.cause, e.local) }
func (e *jobError) Unwrap() []error { return []error{e.cause, e.local} }

// explained is a failure Explain found nothing to add to; it reads as the
// failure itself, and Explain does not wait for the job again.
type explained struct{ error }

func (e explained) Unwrap() error { return e.error }
