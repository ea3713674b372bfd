package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"sexton/dfsio"
)

// rebuildDFSFile is one allocator file below the DFS root.
type rebuildDFSFile struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// scanRebuildDFS lists the lost cluster's DFS root for `operator rebuild
// --dfs-root`. The root holds only the value bytes of DFS replicas, at
// ranges of shared bucket and shard files; which key and incarnation a
// range holds, and whether it was removed, lived only in the masters'
// state. So no DFS replica can be adopted from it without bringing back a
// removed value or pairing bytes with the wrong key: the rebuild adopts
// LOCAL_DISK copies only and reports the files, whose DFS-only objects are
// lost. A root that is missing or another cluster's is refused (the wrong
// directory says nothing about the lost cluster); one without a marker
// and without allocator files is an empty root.
func scanRebuildDFS(root string, cluster uint64) ([]rebuildDFSFile, error) {
	p, err := dfsio.Open(dfsio.Settings{Root: filepath.Clean(root), Adapter: dfsio.AdapterPosix})
	if err != nil {
		return nil, err
	}
	p.Bind(cluster)
	rootErr := p.CheckRoot()
	if rootErr != nil && !errors.Is(rootErr, dfsio.ErrNoRootMarker) {
		return nil, fmt.Errorf("--dfs-root: %w; name the lost cluster's DFS root, or leave --dfs-root out", rootErr)
	}
	names, err := p.List()
	if err != nil {
		return nil, fmt.Errorf("--dfs-root: %w", err)
	}
	if rootErr != nil && len(names) > 0 {
		return nil, fmt.Errorf("--dfs-root: %w; it holds %d allocator files of no known cluster: name the lost cluster's DFS root, or leave --dfs-root out", rootErr, len(names))
	}
	out := make([]rebuildDFSFile, 0, len(names))
	for _, n := range names {
		st, err := os.Stat(filepath.Join(p.Root(), n))
		if err != nil {
			return nil, fmt.Errorf("--dfs-root: %w", err)
		}
		out = append(out, rebuildDFSFile{Path: n, Bytes: st.Size()})
	}
	return out, nil
}

// checkRebuildDFS fills the report's DFS part and refuses a rebuild that
// would lose DFS-only objects unless --dfs-drop says the operator decided
// so. A dry run reports and never refuses.
func checkRebuildDFS(o rebuildOptions, cluster uint64, rep *rebuildReport) error {
	if o.dfsRoot == "" {
		return nil
	}
	files, err := scanRebuildDFS(o.dfsRoot, cluster)
	if err != nil {
		return err
	}
	rep.DFSRoot, rep.DFSFiles = o.dfsRoot, files
	var bytes int64
	for _, f := range files {
		bytes += f.Bytes
	}
	if len(files) == 0 || o.dryRun || o.dfsDrop {
		return nil
	}
	return fmt.Errorf("the DFS root %s holds %d allocator files (%d bytes) of cluster %016x: the root records no key, incarnation or removal for the bytes in them, so no DFS replica can be adopted and an object that had only DFS replicas is lost; its files are removed as strays once the rebuilt cluster's leader uses the root. Copy them aside if they matter, then rerun with --dfs-drop to rebuild without them (nothing was changed)",
		o.dfsRoot, len(files), bytes, cluster)
}

func printRebuildDFS(r *rebuildReport) {
	for _, f := range r.DFSFiles {
		fmt.Printf("dfs    %s (%d bytes): not adoptable, the DFS root records no key, incarnation or removal for it\n", f.Path, f.Bytes)
	}
}
