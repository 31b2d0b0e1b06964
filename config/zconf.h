/* zconf — the one schema and loader of the Zaris cluster file
 * (/etc/zaris.conf), shared by zaris-supervisor, zarisctl and zarisd.
 *
 * The file is libconfig syntax with these top-level settings:
 *
 *   cluster      = { name = "..."; <zarisd defaults> };
 *   supervisor   = { health-interval = "1s"; ... };     (timings, optional)
 *   coordination = { etcd = "run"; machines = (...); }; (failover, optional)
 *   nodes      = ( { name = "a"; address = "127.0.0.1"; port = 6379;
 *                    <zarisd settings overriding the cluster's> }, ... );
 *
 * zarisd settings are named exactly like zarisd's flags and Redis's config
 * keys (maxmemory, maxmemory-policy, io-backend, ...). config/zaris.conf
 * documents every key. Loading parses, type-checks, normalises units
 * ("12gb", "75%" of this machine's RAM, "500ms"), decides which nodes run
 * on this machine, and validates both the whole cluster (duplicate names and
 * addresses, replica-of targets) and the local instances together (cores
 * that overlap, memory that adds up to more than the machine has, ports that
 * collide). Every error names file and line.
 *
 * Nothing here knows the supervisor or zarisd; zarisd consumes a node
 * through zconf_node_foreach_setting() as key/value strings and applies them
 * through its settings, which read the same schema (config/schema.h) as the
 * checks here, so a value the file takes is one zarisd takes. Not thread-safe: a struct zconf is built
 * once and then only read (reading from several threads is fine).
 */
#ifndef ZCONF_H
#define ZCONF_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#define ZCONF_DEFAULT_PATH "/etc/zaris.conf"

/* Where and why loading failed. LINE is 0 when no line applies (I/O error,
 * a --node name that is not in the file). */
struct zconf_error {
	char file[256];
	int line;
	char message[512];
};

/* The zarisd settings a cluster file may set, cluster-wide or per node.
 * Each is the schema entry (config/schema.h) whose `file` names it; its
 * name (zconf_key_name) is zarisd's flag name. */
enum zconf_key {
	ZCONF_K_BIND,
	ZCONF_K_THREADS,
	ZCONF_K_CORES,
	ZCONF_K_IO_BACKEND,
	ZCONF_K_MAXMEMORY,
	ZCONF_K_MAXMEMORY_POLICY,
	ZCONF_K_REQUIREPASS,
	ZCONF_K_MAXCLIENTS,
	ZCONF_K_TIMEOUT,
	ZCONF_K_DATABASES,
	ZCONF_K_PROTECTED_MODE,
	ZCONF_K_LOGLEVEL,
	ZCONF_K_LOGFILE,
	ZCONF_K_DIR,
	ZCONF_K_APPENDONLY,
	ZCONF_K_APPENDFSYNC,
	ZCONF_K_SAVE,
	ZCONF_K_ENABLE_DEBUG_COMMAND,
	ZCONF_K_DISABLE_THP,
	ZCONF_K_JEMALLOC_BG_THREAD,
	ZCONF_K_REPLICA_ACK,
	ZCONF_K_REPLICA_ACK_TIMEOUT,
	ZCONF_K_NATIVE_PORT, /* 0 = no native listener; distinct from every port on its address */
	ZCONF_K_NATIVE_RF1,  /* only on a primary without replicas and without appendonly */
	ZCONF_K__COUNT
};

enum zconf_role {
	ZCONF_ROLE_PRIMARY,
	ZCONF_ROLE_REPLICA
};

/* Supervisor timings (group `supervisor`), all in milliseconds. */
struct zconf_supervisor {
	int health_interval_ms;	 /* between two health checks of one instance */
	int health_timeout_ms;	 /* one check (connect, PING, INFO) must finish within */
	int health_failures;	 /* consecutive failed checks before a restart */
	int start_timeout_ms;	 /* a started instance must answer PING within */
	int stop_timeout_ms;	 /* SIGTERM grace before SIGKILL */
	int backoff_min_ms;	 /* first restart delay after a crash */
	int backoff_max_ms;	 /* cap of the doubling delay */
	int crash_loop_restarts; /* consecutive crashes that count as a crash loop */
	int stable_ms;		 /* up this long resets the crash count */
	int catch_up_lag;	 /* bytes: a restarted replica is caught up within */
	int catch_up_timeout_ms; /* a rolling restart waits this long for it */
};

/* One node of the cluster. Values are normalised text: sizes in bytes,
 * booleans "yes"/"no", cores as a sorted list with ranges ("0-3,6"). */
struct zconf_node {
	char *name;
	char *address; /* numeric IPv4/IPv6, how others reach it */
	int port;
	char *host; /* hostname that runs it, NULL = decide by address */
	enum zconf_role role;
	char *replica_of;	   /* name of its primary when role is REPLICA, else NULL */
	int replica_of_line;	   /* line of `replica-of` (or of the group) */
	char *set[ZCONF_K__COUNT]; /* this node's own values, NULL = inherit */
	int set_line[ZCONF_K__COUNT];
	char *slots;	    /* cluster mode: the slots it serves, normalised ("0-5460,6000"); "" for a
			* primary without slots and for a replica; NULL when cluster mode is off */
	int slots_line;	    /* line of its own `slots`, 0 when it has none */
	int line;	    /* line of the node's group in the file */
	bool is_local;	    /* runs on this machine */
	int machine;	    /* index in coord.machines, -1 when no machines are declared */
	char *machine_name; /* its own `machine`, NULL = the machine with its address */
	int machine_line;   /* line of `machine`, 0 when absent */
	/* effective values derived at load (cluster defaults overridden by the node) */
	unsigned long long maxmemory; /* bytes, 0 = no limit */
	cpu_set_t cores;	      /* empty = not pinned */
};

/* A machine of the coordination section: one supervisor, and with
 * etcd = "run" one etcd member (client and peer ports on ADDRESS). */
struct zconf_machine {
	char *name;
	char *address; /* numeric IP */
	int etcd_client_port, etcd_peer_port;
	int line;
	bool is_local; /* the machine this process runs for (coord.local_machine) */
};

/* Group `coordination`: failover through etcd. ENABLED is false when the
 * section is absent (then everything else is zero / NULL, local_machine
 * -1). */
struct zconf_coord {
	bool enabled;
	int line;	 /* line of the group */
	bool run_etcd;	 /* etcd = "run": the supervisors run one member per machine */
	char *endpoints; /* client URLs, comma-separated: as given, or built from the machines when run */
	int lease_ttl_ms, replica_validity_ms;
	char *prefix;	/* etcd key prefix ("/zaris") */
	char *etcd_dir; /* NULL = default (zconf_etcd_member_dir) */
	struct zconf_machine *machines;
	size_t n_machines;
	int local_machine; /* index of this machine, -1 when none or unknown */
};

#define ZCONF_COORD_DEFAULT_PREFIX "/zaris"
#define ZCONF_ETCD_CLIENT_PORT 2379
#define ZCONF_ETCD_PEER_PORT 2380

/* A loaded cluster file. Invariant: names and address:port pairs are unique
 * (a node's native-port counts as one of its address's ports),
 * every replica_of names another node and following replica_of from any node
 * ends at a primary (chains, no loops), the local nodes' cores are disjoint. */
struct zconf {
	char *path;
	char *cluster_name;
	char *defaults[ZCONF_K__COUNT]; /* cluster-wide values, NULL = zarisd's default */
	int default_line[ZCONF_K__COUNT];
	struct zconf_supervisor sv;
	struct zconf_node *nodes;
	size_t n_nodes;
	size_t n_local;
	unsigned long long mem_total; /* this machine's RAM, what "75%" is taken of */
	/* cluster mode (group `cluster`: enabled, slots) */
	bool cluster_enabled;
	int cluster_enabled_line;
	bool slots_auto;   /* slots = "auto", or no node gives its own */
	int slots_line;	   /* line of the cluster's `slots`, 0 when absent */
	short *slot_owner; /* cluster mode: ZCONF_SLOTS entries, the index in nodes of each slot's
			    * primary (every slot has one once loaded); NULL when off */
	struct zconf_coord coord;
};

/* Redis Cluster's hash slots. */
#define ZCONF_SLOTS 16384

/* Loads and validates PATH. LOCAL_NODES is NULL to find this machine's nodes
 * (a node whose `host` equals gethostname(), else one without `host` whose
 * address is bound here), a comma-separated list of node names that are
 * local no matter what, or "machine:NAME" (ZCONF_LOCAL_MACHINE, what
 * zaris-supervisor --machine passes): exactly the nodes of coordination
 * machine NAME, which becomes coord.local_machine. Without "machine:" and
 * with machines declared, coord.local_machine is the machine of the local
 * nodes: a --node list of nodes on different machines is an error; found by
 * address (NULL) on a box where several machines' addresses are local (a
 * loopback test cluster) it stays -1. Returns 0 and *OUT (caller frees with zconf_free),
 * or -EINVAL (invalid file), -ENOENT/-EACCES/-EIO (cannot read) with ERR
 * filled in; *OUT is then NULL. */
int zconf_load_local(const char *path, const char *local_nodes, struct zconf **out, struct zconf_error *err);
#define ZCONF_LOCAL_MACHINE "machine:"
/* zconf_load_local(PATH, NULL, OUT, ERR). */
int zconf_load(const char *path, struct zconf **out, struct zconf_error *err);
/* Frees CONF and everything it owns; NULL is fine. */
void zconf_free(struct zconf *conf);

/* "file:line: message" (or "file: message" when line is 0) into BUF. */
void zconf_error_format(const struct zconf_error *err, char *buf, size_t size);

/* The node called NAME, or NULL. Borrowed from CONF. */
const struct zconf_node *zconf_find_node(const struct zconf *conf, const char *name);

/* NODE's data directory: its own `dir` as given, else the cluster's `dir`
 * (default ".") plus "/<node name>", so that local instances never share
 * their persistence files. Writes it into BUF; returns its length, or
 * -ENAMETOOLONG. */
int zconf_node_dir(const struct zconf *conf, const struct zconf_node *node, char *buf, size_t size);

/* Where machine M's etcd member keeps its data (etcd = "run"): the
 * section's etcd-dir plus "/<machine name>", else the cluster's `dir`
 * (default ".") plus "/etcd-<machine name>". Writes it into BUF; returns
 * its length, or -ENAMETOOLONG. */
int zconf_etcd_member_dir(const struct zconf *conf, const struct zconf_machine *m, char *buf, size_t size);
/* etcd's --initial-cluster for the run members: "m1=http://A:PEER,m2=..."
 * in file order, into BUF ("" without machines). */
void zconf_etcd_initial_cluster(const struct zconf *conf, char *buf, size_t size);
/* The machine called NAME, or NULL. Borrowed from CONF. */
const struct zconf_machine *zconf_find_machine(const struct zconf *conf, const char *name);

/* The effective value of KEY for NODE (the node's, else the cluster's), or
 * NULL when neither sets it. Borrowed from CONF. */
const char *zconf_node_value(const struct zconf *conf, const struct zconf_node *node, enum zconf_key key);
/* The line NODE's value of KEY comes from: the node's own setting, else the
 * cluster's, else 0 when neither sets it. */
int zconf_node_value_line(const struct zconf *conf, const struct zconf_node *node, enum zconf_key key);
/* NODE's effective native-port (the node's, else the cluster's), 0 when it
 * has none (unset or 0: no native listener). */
int zconf_node_native_port(const struct zconf *conf, const struct zconf_node *node);

/* Calls FN(key, value, CTX) for every effective zarisd setting of NODE, in
 * enum order, starting with "port" and "bind" (the node's address unless
 * bind is set), then each key that the node or the cluster sets; a replica
 * ends with "replicaof" ("ADDR PORT" of its primary, zconf_replicaof) and,
 * when its primary requires a password, "masterauth"; in cluster mode
 * "cluster-enabled" "yes" comes next, and with coordination "write-lease"
 * "yes" last (writes only under the supervisor's lease). Stops at and returns
 * FN's first non-zero result; 0 when all were visited. */
typedef int (*zconf_setting_fn)(const char *key, const char *value, void *ctx);
int zconf_node_foreach_setting(const struct zconf *conf, const struct zconf_node *node, zconf_setting_fn fn,
			       void *ctx);

/* The primary NODE replicates from, as REPLICAOF takes it ("ADDR PORT":
 * the primary's declared address, even when it binds 0.0.0.0), into BUF
 * (at least 64 bytes). Returns NODE's primary, or NULL (BUF "") for a
 * primary. */
const struct zconf_node *zconf_replicaof(const struct zconf *conf, const struct zconf_node *node, char *buf,
					 size_t size);
/* The password NODE must give its primary (the primary's requirepass), or
 * NULL for a primary or when the primary has none. Borrowed from CONF. */
const char *zconf_masterauth(const struct zconf *conf, const struct zconf_node *node);
/* How many replica-of links lead from NODE to a primary (0 for a primary,
 * 1 for a replica of a primary, 2 for a replica of that replica ...). */
int zconf_replica_depth(const struct zconf *conf, const struct zconf_node *node);

/* Cluster mode, a failover: makes node NAME the primary of its shard in
 * CONF (it must be a replica of a primary, or already a primary). It takes
 * its primary's slots; that primary and its other replicas become replicas
 * of NAME. The supervisor applies what etcd recorded this way, so spawn
 * arguments, re-points and the topology follow the conf in force. Returns
 * 0, -ENOENT (no such node, or not cluster mode) or -EINVAL. */
int zconf_promote(struct zconf *conf, const char *name);

/* Slot lists: comma-separated "a-b" or "a", 0 to ZCONF_SLOTS - 1, each slot
 * once. Sets the bits of the slots S names in OWNED (ZCONF_SLOTS / 8 bytes,
 * not cleared first). Returns 0, or -EINVAL with the reason in WHY. */
int zconf_parse_slots(const char *s, unsigned char *owned, char *why, size_t whysize);
/* Formats the set bits of OWNED as ranges ("0-5460,6000") into BUF; "" when
 * none. */
void zconf_format_slots(const unsigned char *owned, char *buf, size_t size);
/* The hex node id of NODE in cluster mode: SHA-1 of "<cluster name>/<node
 * name>", 40 lowercase digits, into OUT. */
void zconf_node_id(const struct zconf *conf, const struct zconf_node *node, char out[41]);

/* Builds the argv to exec zarisd for NODE: { EXE, "--port", "6379", ...,
 * NULL }. Returns the NULL-terminated vector (free with zconf_argv_free),
 * NULL on allocation failure. */
char **zconf_node_argv(const struct zconf *conf, const struct zconf_node *node, const char *exe);
void zconf_argv_free(char **argv);

/* Name of KEY as flag/config key ("maxmemory-policy"). */
const char *zconf_key_name(enum zconf_key key);
/* Whether zarisd can change KEY at run time through CONFIG SET (the
 * supervisor applies such a change without a restart). */
bool zconf_key_is_live(enum zconf_key key);

/* Unit parsers, also usable by zarisd. Each returns 0 or -EINVAL.
 * Sizes follow Redis: "100", "1k" = 1000, "1kb" = 1024, m/mb, g/gb, t/tb,
 * case-insensitive; "75%" is that share of TOTAL (rejected when TOTAL is 0). */
int zconf_parse_size(const char *s, unsigned long long total, unsigned long long *out);
/* Durations: "500ms", "2s", "1m", "1h"; a bare number is milliseconds. */
int zconf_parse_duration_ms(const char *s, long long *out);
/* Cores: "0,1", "0-3,6". Fills SET and writes the normalised text into
 * NORM (at least 16 bytes). */
int zconf_parse_cores(const char *s, cpu_set_t *set, char *norm, size_t normsize);
/* Formats SET as "0-3,6" into BUF. */
void zconf_format_cores(const cpu_set_t *set, char *buf, size_t size);

/* This machine's RAM in bytes (what "75%" refers to). */
unsigned long long zconf_mem_total(void);

#endif
