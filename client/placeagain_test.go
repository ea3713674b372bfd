package client

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sexton/api"
)

// TestPlaceAgain: a put whose placement fails ends at once unless a write
// failure moved it away from a holder; then a placement that finds no
// holder left clears the exclusions and tries again while attempts
// remain, and any other failure ends the put naming what it avoided.
func TestPlaceAgain(t *testing.T) {
	c := &Client{cfg: Config{PutAttempts: 3}}
	noSpace := api.Errorf(api.CodeNoSpace, "no segment")
	writeErr := errors.New("holder h1 refused")
	ctx := context.Background()

	req := api.PutStartRequest{Exclude: []api.SegmentID{"s1"}}
	if err := c.placeAgain(ctx, api.MethodPutGrant, noSpace, nil, &req, 0); err == nil || !strings.HasPrefix(err.Error(), "PutGrant: ") || api.CodeOf(err) != api.CodeNoSpace {
		t.Fatalf("first placement: %v", err)
	}

	if err := c.placeAgain(ctx, api.MethodPutStart, noSpace, writeErr, &req, 1); err != nil {
		t.Fatalf("no holder left with attempts remaining: %v", err)
	}
	if req.Exclude != nil {
		t.Fatalf("exclusions kept: %v", req.Exclude)
	}

	req.Exclude = []api.SegmentID{"s1"}
	err := c.placeAgain(ctx, api.MethodPutStart, noSpace, writeErr, &req, 2)
	if err == nil || !strings.Contains(err.Error(), "PutStart away from [s1]") || !strings.Contains(err.Error(), writeErr.Error()) {
		t.Fatalf("last attempt: %v", err)
	}

	other := api.Errorf(api.CodeInvalidParams, "bad key")
	if err := c.placeAgain(ctx, api.MethodPutStart, other, writeErr, &req, 0); api.CodeOf(err) != api.CodeInvalidParams {
		t.Fatalf("a failure other than no placement: %v", err)
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.placeAgain(done, api.MethodPutStart, noSpace, writeErr, &req, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v", err)
	}
}
