package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Setting is one thing every rank of a job must have been started with
// alike (the command, a size, a file's contents, the program's version),
// by the name its front end gives it.
type Setting struct {
	Name  string `json:"n"`
	Value string `json:"v"`
}

// ErrSettingsDiffer is a job whose ranks were started with different
// settings: they would wait for each other in different calls for ever.
// It is the caller's mistake (a per-node wrapper, two versions), found at
// the rendezvous before anything runs.
var ErrSettingsDiffer = errors.New("the job's ranks were started with different settings")

// differ names the first setting where theirs (rank's) differs from
// rank 0's: one line naming both ranks and both values; "" when they
// agree.
func differ(rank int, theirs, ours []Setting) string {
	mine := map[string]string{}
	for _, s := range theirs {
		mine[s.Name] = s.Value
	}
	seen := map[string]bool{}
	for _, s := range ours {
		seen[s.Name] = true
		v, ok := mine[s.Name]
		switch {
		case !ok:
			return fmt.Sprintf("rank %d was started without %s, which rank 0 has as %s", rank, s.Name, quote(s.Value))
		case v != s.Value:
			return fmt.Sprintf("rank %d was started with %s %s, rank 0 with %s", rank, s.Name, quote(v), quote(s.Value))
		}
	}
	for _, s := range theirs {
		if !seen[s.Name] {
			return fmt.Sprintf("rank %d was started with %s %s, which rank 0 has not", rank, s.Name, quote(s.Value))
		}
	}
	return ""
}

// quote shows a value as it is, unless it is empty or holds what would
// break the line.
func quote(v string) string {
	for _, r := range v {
		if r < ' ' || r == 0x7f {
			return fmt.Sprintf("%q", v)
		}
	}
	if v == "" {
		return `""`
	}
	return v
}

func encodeSettings(s []Setting) []byte {
	if len(s) == 0 {
		return nil
	}
	data, _ := json.Marshal(s) // strings only: cannot fail
	return data
}

func decodeSettings(data []byte) ([]Setting, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var s []Setting
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%w: settings: %v", errFrame, err)
	}
	return s, nil
}
