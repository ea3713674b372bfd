package rebuild

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sexton/api"
	"sexton/dfsio"
)

// loadDFSRoot reads the lost cluster's DFS root for RunOptions.DFSRoot:
// its files (reported) and its journal of range records, which the merge
// treats as copies under the holders' rules (dfs.go). A root that is
// missing or unreadable is refused (the wrong directory says nothing
// about the lost cluster); one without a marker is accepted only while it
// holds no allocator file and no journal (an empty root). With DFSDrop
// the files are reported and nothing is adopted from them. A root with
// files and no journal (written by a build without range records) is
// refused unless DFSDrop: its DFS-only objects cannot be adopted. call
// asks the leader for the cluster's DFS settings when records are to be
// adopted.
func loadDFSRoot(call func(method string, req, resp any) error, o RunOptions, rep *Report) (*DFSOptions, error) {
	if o.DFSRoot == "" {
		return nil, nil
	}
	root := filepath.Clean(o.DFSRoot)
	p, err := dfsio.Open(dfsio.Settings{Root: root, Adapter: dfsio.AdapterPosix})
	if err != nil {
		return nil, err
	}
	cluster, rootErr := p.MarkerCluster()
	if rootErr != nil && !errors.Is(rootErr, dfsio.ErrNoRootMarker) {
		return nil, fmt.Errorf("--dfs-root: %w; name the lost cluster's DFS root, or leave --dfs-root out", rootErr)
	}
	names, err := p.List()
	if err != nil {
		return nil, fmt.Errorf("--dfs-root: %w", err)
	}
	recs, torn, err := p.ScanRecords()
	if err != nil {
		return nil, fmt.Errorf("--dfs-root: %w", err)
	}
	if rootErr != nil && (len(names) > 0 || len(recs) > 0) {
		return nil, fmt.Errorf("--dfs-root: %w; it holds %d allocator files and %d range records of no known cluster: name the lost cluster's DFS root, or leave --dfs-root out", rootErr, len(names), len(recs))
	}
	files := make([]ReportDFSFile, 0, len(names))
	var bytes int64
	for _, n := range names {
		st, err := os.Stat(filepath.Join(root, n))
		if err != nil {
			return nil, fmt.Errorf("--dfs-root: %w", err)
		}
		files = append(files, ReportDFSFile{Path: n, Bytes: st.Size()})
		bytes += st.Size()
	}
	rep.DFSRoot, rep.DFSFiles, rep.DFSRecords, rep.DFSTorn, rep.DFSDropped = o.DFSRoot, files, len(recs), torn, o.DFSDrop
	if o.DFSDrop {
		return nil, nil
	}
	if len(files) > 0 && len(recs) == 0 && !o.DryRun {
		return nil, fmt.Errorf("the DFS root %s holds %d allocator files (%d bytes) but no range records (%s: written by a build without them), so no DFS replica can be adopted and an object that had only DFS replicas is lost; its files are removed as strays once the rebuilt cluster's leader uses the root. Copy them aside if they matter, then rerun with --dfs-drop to rebuild without them (nothing was changed)",
			o.DFSRoot, len(files), bytes, dfsio.RecordsName)
	}
	if len(recs) > 0 && !o.DryRun {
		// Adopted descriptors name files below the masters' own root:
		// it must be this one.
		var cfg api.DFSConfigResponse
		if err := call(api.MethodDFSConfig, &api.Empty{}, &cfg); err != nil {
			return nil, fmt.Errorf("DFS settings of this cluster: %w", err)
		}
		if !cfg.Enabled || filepath.Clean(cfg.Root) != root {
			return nil, fmt.Errorf("this cluster's masters use DFS root %q, not --dfs-root %s: start them with %s=%s and the lost cluster's other %s settings to adopt its DFS replicas, or rerun with --dfs-drop to rebuild without them (nothing was changed)",
				cfg.Root, root, dfsio.EnvRoot, root, "MOONCAKE_DFS_*")
		}
	}
	return &DFSOptions{ClusterID: cluster, Records: recs, Verify: func(r dfsio.RangeRecord) bool {
		b, err := p.ReadAt(r.Desc())
		return err == nil && int64(len(b)) == r.Size && dfsio.Checksum(b) == r.CRC
	}}, nil
}

// writeDFSKills appends, fdatasynced, a removal record for every put
// record of the lost cluster the plan does not adopt (Plan.DFSKills),
// before anything is adopted: as a holder copy the rebuild does not adopt
// becomes a delete task, such a record must never count again (a later
// rebuild, once the adopted value is removed).
func writeDFSKills(root string, plan *Plan) error {
	if len(plan.DFSKills) == 0 {
		return nil
	}
	p, err := dfsio.Open(dfsio.Settings{Root: filepath.Clean(root), Adapter: dfsio.AdapterPosix})
	if err != nil {
		return err
	}
	for rest := plan.DFSKills; len(rest) > 0; {
		n := min(len(rest), 256)
		if err := p.AppendRecords(rest[:n], true); err != nil {
			return fmt.Errorf("write the removal records of %d DFS put records the rebuild does not adopt (nothing was adopted; rerun): %w", len(plan.DFSKills), err)
		}
		rest = rest[n:]
	}
	return nil
}
