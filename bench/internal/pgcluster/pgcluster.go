// Package pgcluster is the benchmarks' side of a PostgreSQL cluster: a fresh database per
// scenario (CREATE DATABASE, dropped after) and the CPU time of the cluster's processes, which
// on a small machine compete with bothy and the load generator. The cluster is a superuser's URL
// (bench/run starts a throwaway one with .ci/pg, or takes BOTHY_BENCH_POSTGRES_URL /
// BOTHY_TEST_POSTGRES_URL). It creates and drops databases with storage/storetest/pgdb, the
// tests' own helpers, and connects with storage/postgres. It is for benchmarks only.
package pgcluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"bothy.dev/bothy/bench/internal/measure"
	"bothy.dev/bothy/storage/postgres"
	"bothy.dev/bothy/storage/storetest/pgdb"
)

// EnvURL names the variable bothybench reads the cluster's URL from when no -postgres flag
// gives it; bench/run sets it.
const EnvURL = "BOTHY_BENCH_POSTGRES_URL"

// URL returns flagValue, or the cluster URL from the environment (BOTHY_BENCH_POSTGRES_URL,
// then the tests' BOTHY_TEST_POSTGRES_URL), or an error naming both.
func URL(flagValue string) (string, error) {
	for _, u := range []string{flagValue, os.Getenv(EnvURL), os.Getenv(pgdb.EnvURL)} {
		if u != "" {
			return u, nil
		}
	}
	return "", fmt.Errorf("pgcluster: no PostgreSQL cluster: give -postgres URL or set %s (bash bench/run starts one)", EnvURL)
}

// Cluster is a connection to a cluster's maintenance database.
type Cluster struct {
	url   string
	admin *sql.DB
	// postmaster is the cluster's main process, 0 when it is not readable in this machine's
	// /proc (a cluster elsewhere, or in another pid namespace).
	postmaster int
}

// Connect connects to the cluster at url (a superuser's, or one allowed to create databases)
// and finds its postmaster through the pid of its own backend.
func Connect(ctx context.Context, url string) (*Cluster, error) {
	w, r, err := postgres.Open(ctx, postgres.Options{URL: url, MaxOpenConns: 1})
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	r.Close()
	c := &Cluster{url: url, admin: w}
	var backend int
	if err := w.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		w.Close()
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	if pp, err := measure.ParentPid(backend); err == nil && pp > 1 {
		c.postmaster = pp
	}
	return c, nil
}

// Close closes the connection.
func (c *Cluster) Close() error { return c.admin.Close() }

// Database is a fresh, empty database on the cluster.
type Database struct {
	Name, URL string
	c         *Cluster
}

// NewDatabase creates an empty database (bothy_bench_ and random hex); Drop drops it.
func (c *Cluster) NewDatabase(ctx context.Context) (*Database, error) {
	name := pgdb.NewName("bothy_bench_")
	if err := pgdb.CreateDatabase(ctx, c.admin, name, ""); err != nil {
		return nil, fmt.Errorf("pgcluster: create database: %w", err)
	}
	u, err := pgdb.WithDatabase(c.url, name)
	if err != nil {
		_ = pgdb.Drop(ctx, c.admin, name)
		return nil, err
	}
	return &Database{Name: name, URL: u, c: c}, nil
}

// Drop drops the database, ending its sessions first.
func (d *Database) Drop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return pgdb.Drop(ctx, d.c.admin, d.Name)
}

// ErrNoCPU is CPU's error when the cluster's processes cannot be read here.
var ErrNoCPU = errors.New("pgcluster: the cluster's processes are not in this machine's /proc")

// CPU returns the CPU time the cluster's processes (postmaster, backends, WAL writer,
// checkpointer, …) have used so far: measure.ProcTreeCPU of the postmaster. It counts every
// database of the cluster, so it is only the benchmark's when nothing else uses the cluster.
func (c *Cluster) CPU() (time.Duration, error) {
	if c.postmaster == 0 {
		return 0, ErrNoCPU
	}
	return measure.ProcTreeCPU(c.postmaster)
}
