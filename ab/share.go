package ab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Share hands rank 0's v to every process of a group of size processes,
// as JSON: a decision rank 0 made that every process must act on alike.
// With one process it does nothing.
func Share(ctx context.Context, g Gatherer, rank, size int, v any) error {
	if size <= 1 {
		return nil
	}
	var mine []byte
	if rank == 0 {
		var err error
		if mine, err = json.Marshal(v); err != nil {
			return err
		}
	}
	parts, err := g.AllGather(ctx, mine)
	if err != nil {
		return fmt.Errorf("agreeing with the other processes: %w", err)
	}
	if rank != 0 {
		return json.NewDecoder(bytes.NewReader(parts[0])).Decode(v)
	}
	return nil
}
