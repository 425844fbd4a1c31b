package charge

import (
	"fmt"
	"strings"

	"github.com/collbench/collbench/export"
)

// exportOf is the export target whose files a planner charges from.
func exportOf(p Planner) string {
	if p.Name() == "simai-1.1" {
		return "simai" // busbw.yaml, beside current SimAI's files
	}
	return p.Name()
}

// FromProfile holds the planners opened from dir to the profile whose
// digest is given (document.Profile.Digest): a planner whose export the
// folder records as made from another profile is an error, since its
// charges would be held against times it was not made from. unknown lists
// the planners the folder keeps no record for (an older export, files
// made by hand), which cannot be told apart.
func FromProfile(dir string, planners []Planner, digest string) (unknown []string, err error) {
	made, err := export.ReadProvenance(dir)
	if err != nil {
		return nil, err
	}
	var others []string
	for _, p := range planners {
		d, ok := made[exportOf(p)]
		switch {
		case !ok:
			unknown = append(unknown, p.Name())
		case d != digest:
			others = append(others, fmt.Sprintf("%s (%s)", exportOf(p), d))
		}
	}
	if len(others) > 0 {
		return unknown, fmt.Errorf("%s holds exports made from another profile than this one (%s): %s; export this profile into it again",
			dir, digest, strings.Join(others, ", "))
	}
	return unknown, nil
}
