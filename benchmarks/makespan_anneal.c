/* Sequential simulated annealer for the worst-case warp makespan: the C baseline of
 * benchmarks/makespan.py. Same rules as jaxsched.makespan.anneal: neighbour = pair p < q uniform
 * over all pairs, swap (1/2) or move q -> p (1/4) or p -> q (1/4); re-decode the suffix from p
 * (prefix counters rebuilt from the kept per-position cycles); accept if not worse, else with
 * probability min(1, T / (m - m_cand)), T = t0 (1 - it / iterations). Earliest free cycle by a
 * forward scan over per-cycle counters (the natural sequential choice).
 *
 * Build: cc -O2 -shared -fPIC makespan_anneal.c -o libmakespan.so
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int n, warps, sigma, cap[4];
    const int *types;
    int *sched, *unit[4], *count, *last;
} ctx_t;

static uint64_t rng_state;
static inline uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double uniform(void) { return (next_u64() >> 11) * (1.0 / 9007199254740992.0); }
static inline int below(int k) { return (int)(uniform() * k); }

/* Decode positions p..n-1 of s into cyc/uni, positions < p taken from cyc/uni. Returns makespan. */
static int redecode(ctx_t *c, const int *s, int *cyc, int *uni, int p) {
    int horizon = c->n + 1;
    memset(c->sched, 0, sizeof(int) * horizon);
    for (int u = 0; u < 4; u++) memset(c->unit[u], 0, sizeof(int) * horizon);
    memset(c->count, 0, sizeof(int) * c->warps);
    for (int w = 0; w < c->warps; w++) c->last[w] = -1;
    int top = -1;
    for (int i = 0; i < p; i++) {
        int w = s[i], t = cyc[i];
        c->sched[t]++;
        c->unit[uni[i]][t]++;
        c->count[w]++;
        c->last[w] = t;
        if (t > top) top = t;
    }
    for (int i = p; i < c->n; i++) {
        int w = s[i], u = c->types[c->count[w]], t = c->last[w] + 1;
        while (c->sched[t] >= c->sigma || c->unit[u][t] >= c->cap[u]) t++;
        c->sched[t]++;
        c->unit[u][t]++;
        c->count[w]++;
        c->last[w] = t;
        cyc[i] = t;
        uni[i] = u;
        if (t > top) top = t;
    }
    return top + 1;
}

/* Anneal from `string` (int[n], overwritten with the best string). Returns the best makespan;
 * *best_iter gets the iteration that first reached it, *seconds the wall time. */
int anneal(const int *types, int n_instr, int warps, const int *cap, int sigma, int *string,
           long iterations, double t0, uint64_t seed, long *best_iter, double *seconds) {
    ctx_t c;
    int n = n_instr * warps, horizon = n + 1;
    c.n = n;
    c.warps = warps;
    c.sigma = sigma;
    c.types = types;
    for (int u = 0; u < 4; u++) c.cap[u] = cap[u];
    c.sched = calloc(horizon, sizeof(int));
    for (int u = 0; u < 4; u++) c.unit[u] = calloc(horizon, sizeof(int));
    c.count = calloc(warps, sizeof(int));
    c.last = calloc(warps, sizeof(int));
    int *cur = malloc(sizeof(int) * n), *cand = malloc(sizeof(int) * n);
    int *cyc = malloc(sizeof(int) * n), *uni = malloc(sizeof(int) * n);
    int *ccyc = malloc(sizeof(int) * n), *cuni = malloc(sizeof(int) * n);
    int *best = malloc(sizeof(int) * n);
    rng_state = seed;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    memcpy(cur, string, sizeof(int) * n);
    memcpy(best, string, sizeof(int) * n);
    int m = redecode(&c, cur, cyc, uni, 0), best_m = m;
    *best_iter = 0;
    for (long it = 0; it < iterations && n >= 2; it++) {
        int i = below(n), j = below(n - 1);
        if (j >= i) j++;
        int p = i < j ? i : j, q = i < j ? j : i;
        int move = (int)(next_u64() & 3);
        memcpy(cand, cur, sizeof(int) * n);
        if (move < 2) {
            cand[p] = cur[q];
            cand[q] = cur[p];
        } else if (move == 2) {
            memmove(cand + p + 1, cur + p, sizeof(int) * (q - p));
            cand[p] = cur[q];
        } else {
            memmove(cand + p, cur + p + 1, sizeof(int) * (q - p));
            cand[q] = cur[p];
        }
        memcpy(ccyc, cyc, sizeof(int) * p);
        memcpy(cuni, uni, sizeof(int) * p);
        int mc = redecode(&c, cand, ccyc, cuni, p);
        double temp = t0 * (1.0 - (double)it / (double)iterations);
        if (mc >= m || uniform() * (m - mc) < temp) {
            int *t;
            t = cur; cur = cand; cand = t;
            t = cyc; cyc = ccyc; ccyc = t;
            t = uni; uni = cuni; cuni = t;
            m = mc;
            if (m > best_m) {
                best_m = m;
                memcpy(best, cur, sizeof(int) * n);
                *best_iter = it + 1;
            }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    *seconds = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
    memcpy(string, best, sizeof(int) * n);
    free(c.sched);
    for (int u = 0; u < 4; u++) free(c.unit[u]);
    free(c.count); free(c.last); free(cur); free(cand); free(cyc); free(uni);
    free(ccyc); free(cuni); free(best);
    return best_m;
}
