// Package monitoring holds no code: it is the home of the Prometheus
// alert rules, their promtool tests, an example scrape configuration and
// the Grafana dashboard that ship with sexton (README.md), and of the Go
// test that checks every metric those files name is one the master's or
// the holder's registry exports.
package monitoring
