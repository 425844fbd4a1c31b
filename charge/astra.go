package charge

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/collbench/collbench/export"
)

// astra is what ASTRA-sim charges for the calls of the plan whose
// workload collbench wrote (predict's astra-trace): each kind of call at
// the comm_size the trace gives it, on the exported network.
type astra struct {
	calls []export.TracedCall
}

func (astra) Name() string { return "astra-sim" }

func readAstra(path string) (Planner, error) {
	data, err := readExport(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Calls []export.TracedCall `json:"calls"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	return astra{doc.Calls}, nil
}

// Charge is ASTRA-sim's time for the trace's call of that kind: its ring
// over one Switch dimension, a comm_size written so that the time is
// collbench's, or the network's latencies alone where the call is
// shorter than them. A call the trace does not hold is another plan's.
func (a astra) Charge(c Call) (float64, error) {
	for _, t := range a.calls {
		if t.Dim == c.Dim && t.Coll == c.Coll && t.Group == c.Group && math.Abs(t.Bytes-c.Bytes) <= 1e-9*c.Bytes {
			return t.AstraUs, nil
		}
	}
	return 0, fmt.Errorf("the ASTRA-sim workload here was written for another plan: it has no %s %s of %d ranks and %.0f bytes", c.Dim, c.Coll, c.Group, c.Bytes)
}
