/* Sequential C baseline of the colony's ant construction (benchmark only).
 *
 * One ant at a time, the same rules as `ants_step` in jaxsched/colony/construct.py, both passes:
 * a compact ready list (candidate ids, swap-remove, O(ready) per step), predecessor counters,
 * earliest cycles with necessary and optional stalls (ILP pass), per-register remaining uses,
 * live flags, live widths per file and the peak (the liveness model of jaxsched.problem.region),
 * the incremental last-use "kill" widths (XOR of the ids of unscheduled users), scores
 * tau[last][j] * (1 + key[j]) with RP and stall damping, exploit (argmax) with probability q0 or
 * roulette via a prefix sum, one 32-bit hash per decision (`hash32`/`uniform` of construct.py),
 * and early death when a peak breaks the per-file RP limit of the RP cost target (with the
 * "overflow" damping of candidates that would break it while another would not).
 *
 * Inputs are the arrays of `jaxsched.colony.construct.Prepared` (row-major, with their dummy rows
 * for the sentinels: instruction N, register R, ready slot K), so both implementations solve the
 * identical instance; with the same per-ant seeds they make the same decisions (up to float
 * rounding in the prefix sum).
 *
 * Build: cc -O2 -march=native -shared -fPIC colony_baseline.c -o libcolony_baseline.so
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BIG (1 << 30)

typedef struct {
    /* Sizes (N, K, R as in construct.py: arrays have N + 1 rows etc.). */
    int32_t N, K, R, F, D, U, V, n, issue_width;
    /* Prepared arrays. */
    const int32_t *succ;         /* [N + 1, D] */
    const int32_t *succ_lat;     /* [N + 1, D] */
    const int32_t *num_preds;    /* [N + 1] */
    const int32_t *uses;         /* [N + 1, U] */
    const int32_t *defs;         /* [N + 1, V] */
    const int32_t *def_wf;       /* [F, N + 1]: width defined per file */
    const int32_t *reg_wf;       /* [R + 1, F] */
    const int32_t *reg_num_uses; /* [R + 1] */
    const int32_t *reg_users_xor;/* [R + 1] */
    const uint8_t *reg_live_in;  /* [R + 1] */
    const uint8_t *reg_live_out; /* [R + 1] */
    const int32_t *live_through; /* [F] */
    const float *key;            /* [N + 1]: key_rp or key_ilp */
    const int32_t *init_ready;   /* [K + 1] */
    int32_t init_count;
    const int32_t *init_kill;    /* [F, N + 1] */
    /* Step inputs. */
    const float *tau;            /* [N + 1, N + 1] */
    float q0, stall_budget;
    const int32_t *rp_limit;     /* [F]: largest RP per file within the RP cost target */
    const int32_t *soft_limit;   /* [F]: RP per file candidates are steered below */
    /* Parameters. */
    float weight_cp, weight_successors, weight_last_use, rp_damping, overflow_damping;
    float score_floor;
    int32_t timed, stop_dead;
} Problem;

static inline uint32_t hash32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    return x ^ (x >> 16);
}

static inline float uniform01(uint32_t seed, int32_t step) {
    uint32_t bits = hash32(seed + (uint32_t)step * 0x9E3779B9u);
    return (float)(bits >> 8) * (1.0f / (float)(1 << 24));
}

/* (G - 2w) / G, at least 1 / G (monotone; see construct._stall_damping). */
static inline float stall_damping(float w, float g) {
    float d = (g - 2.0f * w) / g;
    return d > 1.0f / g ? d : 1.0f / g;
}

static int over_limit(const Problem *p, const int32_t *rp) {
    for (int f = 0; f < p->F; ++f)
        if (rp[f] > p->rp_limit[f]) return 1;
    return 0;
}

/* Per-ant scratch, allocated once per call and re-initialised per ant. Per-file arrays are
 * minor in the file index: kill[i * F + f], ready_def[k * F + f], ready_kill[k * F + f]. */
typedef struct {
    int32_t *ready, *ready_e, *ready_def, *ready_kill, *slot_of, *preds_left, *earliest, *kill;
    int32_t *remaining, *users_xor, *live_w, *peak;
    float *ready_key, *score;
    uint8_t *live, *eligible, *semi;
} Scratch;

static void add_widths(const Problem *p, int32_t *acc, int32_t r, int32_t sign) {
    const int32_t *w = p->reg_wf + (size_t)r * p->F;
    for (int f = 0; f < p->F; ++f) acc[f] += sign * w[f];
}

static inline int32_t sum_f(const int32_t *x, int F) {
    int32_t s = 0;
    for (int f = 0; f < F; ++f) s += x[f];
    return s;
}

/* A live register r with one use left is killed by that last user: its kill widths grow, in
 * its ready slot too when it is already a candidate. */
static void add_kill(const Problem *p, Scratch *s, int32_t r) {
    const int F = p->F;
    const int32_t u = s->users_xor[r];
    add_widths(p, s->kill + (size_t)u * F, r, 1);
    const int32_t k = s->slot_of[u];
    if (k != p->K) add_widths(p, s->ready_kill + (size_t)k * F, r, 1);
}

/* One ant: fills order[n], peak[F]; returns the length; *stalls_out, *dead_out. */
static int32_t construct_one(const Problem *p, Scratch *s, uint32_t seed, uint32_t coin,
                             int32_t may_stall, int32_t *order, int32_t *peak_out,
                             int32_t *stalls_out, uint8_t *dead_out) {
    const int32_t N = p->N, K = p->K, R = p->R, F = p->F;
    /* Initial state. */
    int32_t count = p->init_count;
    for (int32_t i = 0; i <= N; ++i) {
        s->slot_of[i] = K;
        s->preds_left[i] = p->num_preds[i];
        s->earliest[i] = 0;
        for (int f = 0; f < F; ++f)
            s->kill[(size_t)i * F + f] = p->init_kill[(size_t)f * (N + 1) + i];
    }
    for (int32_t k = 0; k <= K; ++k) {
        int32_t id = k < count ? p->init_ready[k] : N;
        s->ready[k] = id;
        s->ready_e[k] = 0;
        s->ready_key[k] = p->key[id];
        for (int f = 0; f < F; ++f) {
            s->ready_def[(size_t)k * F + f] = p->def_wf[(size_t)f * (N + 1) + id];
            s->ready_kill[(size_t)k * F + f] = s->kill[(size_t)id * F + f];
        }
        if (k < count) s->slot_of[id] = k;
    }
    for (int f = 0; f < F; ++f) s->live_w[f] = 0;
    for (int32_t r = 0; r <= R; ++r) {
        s->remaining[r] = p->reg_num_uses[r];
        s->users_xor[r] = p->reg_users_xor[r];
        s->live[r] = p->reg_live_in[r];
        if (s->live[r]) add_widths(p, s->live_w, r, 1);
    }
    for (int f = 0; f < F; ++f) s->peak[f] = s->live_w[f] + p->live_through[f];
    int32_t last = N, cycle = 0, issued = 0, stalls = 0;
    uint8_t dead = 0;
    const float wl = p->weight_last_use, ws = p->weight_cp + p->weight_successors;
    const float wden = (ws + wl) > 1e-6f ? (ws + wl) : 1e-6f;
    const float g = p->stall_budget;

    for (int32_t t = 0; t < p->n; ++t) {
        if (count <= 0) break; /* cannot happen on a DAG; guards bad input */
        /* ---- decide: ready vs semi-ready; nothing ready: stall to the first earliest ---- */
        int32_t cyc = cycle, iss = issued;
        int any_ready = 0;
        int32_t min_e = BIG;
        for (int32_t k = 0; k < count; ++k) {
            int32_t e = s->ready_e[k];
            if (e <= cycle) any_ready = 1;
            if (e < min_e) min_e = e;
        }
        if (!any_ready) cyc = cycle > min_e ? cycle : min_e;
        if (cyc != cycle) iss = 0;
        /* Register effect of each candidate: raises RP? would break the RP limit? */
        int32_t max_kill = 0;
        int calm_exists = 0, safe_exists = 0, safe_ready = 0;
        for (int32_t k = 0; k < count; ++k) {
            const int32_t *kd = s->ready_def + (size_t)k * F, *kk = s->ready_kill + (size_t)k * F;
            const int32_t semi = s->ready_e[k] > cyc;
            const int32_t kill = sum_f(kk, F);
            int over = 0;
            for (int f = 0; f < F; ++f)
                if (s->live_w[f] + kd[f] - kk[f] + p->live_through[f] > p->soft_limit[f]) over = 1;
            s->semi[k] = (uint8_t)(semi | (over << 1) | ((sum_f(kd, F) > kill) << 2));
            if (!semi && !over) safe_ready = 1;
            if (kill > max_kill) max_kill = kill;
        }
        /* Semi-ready candidates: eligible where stalls are allowed, and wherever no ready
           candidate stays within the soft limit (waiting beats dying). */
        for (int32_t k = 0; k < count; ++k) {
            s->eligible[k] = (uint8_t)(!(s->semi[k] & 1) || may_stall || !safe_ready);
            if (s->eligible[k] && !(s->semi[k] & 4)) calm_exists = 1;
            if (s->eligible[k] && !(s->semi[k] & 2)) safe_exists = 1;
        }
        const float luc_den = max_kill > 1 ? (float)max_kill : 1.0f;
        const float *tau_row = p->tau + (size_t)last * (N + 1);
        const float taken = (float)stalls;
        const float damp_taken = stall_damping(taken, g);
        float total = 0.0f, best = -1.0f;
        int32_t pick_best = K, last_eligible = 0;
        for (int32_t k = 0; k < count; ++k) {
            float score = 0.0f;
            if (s->eligible[k]) {
                const uint8_t flags = s->semi[k];
                float luc = (float)sum_f(s->ready_kill + (size_t)k * F, F) / luc_den;
                float key = (s->ready_key[k] * ws + wl * luc) / wden;
                score = tau_row[s->ready[k]] * (1.0f + key);
                if (calm_exists && (flags & 4)) score *= p->rp_damping;
                if (safe_exists && (flags & 2)) score *= p->overflow_damping;
                if (flags & 1) {
                    float wait = (float)(s->ready_e[k] - cyc);
                    float damp_wait = stall_damping(wait, g);
                    score = score * damp_wait * damp_taken;
                }
                if (score < p->score_floor) score = p->score_floor;
                last_eligible = k;
                if (score > best) {
                    best = score;
                    pick_best = k;
                }
            }
            s->score[k] = score;
            total += score;
        }
        int32_t pick;
        if (uniform01(coin, t) < p->q0) {
            pick = pick_best;
        } else {
            const float r = uniform01(seed, t) * total;
            float csum = 0.0f;
            int32_t below = 0;
            for (int32_t k = 0; k < count; ++k) {
                csum += s->score[k];
                if (csum <= r) ++below; else break;
            }
            pick = below < last_eligible ? below : last_eligible;
        }
        const int32_t j = s->ready[pick];

        /* ---- issue cycle (RP pass: every earliest cycle is <= cycle) ---- */
        const int32_t e_j = s->ready_e[pick];
        const int32_t c_j = cyc > e_j ? cyc : e_j;
        if (e_j > cyc) stalls += c_j - cyc;
        iss = (c_j != cyc ? 0 : iss) + 1;
        if (iss >= p->issue_width) {
            cycle = c_j + 1;
            issued = 0;
        } else {
            cycle = c_j;
            issued = iss;
        }

        /* ---- swap-remove j from the ready list ---- */
        const int32_t last_slot = count - 1;
        const int32_t moved = s->ready[last_slot];
        s->ready[pick] = moved;
        s->ready_e[pick] = s->ready_e[last_slot];
        s->ready_key[pick] = s->ready_key[last_slot];
        for (int f = 0; f < F; ++f) {
            s->ready_def[(size_t)pick * F + f] = s->ready_def[(size_t)last_slot * F + f];
            s->ready_kill[(size_t)pick * F + f] = s->ready_kill[(size_t)last_slot * F + f];
            s->ready_def[(size_t)last_slot * F + f] = 0;
            s->ready_kill[(size_t)last_slot * F + f] = 0;
        }
        s->ready[last_slot] = N;
        s->ready_e[last_slot] = 0;
        s->ready_key[last_slot] = 0.0f;
        s->slot_of[moved] = pick;
        s->slot_of[j] = K;
        --count;

        /* ---- release successors ---- */
        const int32_t *sj = p->succ + (size_t)j * p->D;
        const int32_t *lj = p->succ_lat + (size_t)j * p->D;
        for (int d = 0; d < p->D; ++d) {
            const int32_t x = sj[d];
            if (x == N) continue;
            const int32_t e = c_j + (p->timed ? lj[d] : 0);
            if (e > s->earliest[x]) s->earliest[x] = e;
            if (--s->preds_left[x] == 0) {
                const int32_t k = count++;
                s->ready[k] = x;
                s->ready_e[k] = s->earliest[x];
                s->ready_key[k] = p->key[x];
                for (int f = 0; f < F; ++f) {
                    s->ready_def[(size_t)k * F + f] = p->def_wf[(size_t)f * (N + 1) + x];
                    s->ready_kill[(size_t)k * F + f] = s->kill[(size_t)x * F + f];
                }
                s->slot_of[x] = k;
            }
        }

        /* ---- registers: uses (last uses die), defs born, peak, dead defs die ---- */
        const int32_t *uj = p->uses + (size_t)j * p->U;
        for (int k = 0; k < p->U; ++k) {
            const int32_t r = uj[k];
            if (r == R) continue;
            const int32_t rem = --s->remaining[r];
            s->users_xor[r] ^= j;
            if (!s->live[r] || p->reg_live_out[r]) continue;
            if (rem == 0) {
                s->live[r] = 0;
                add_widths(p, s->live_w, r, -1);
            } else if (rem == 1) {
                add_kill(p, s, r);
            }
        }
        const int32_t *dj = p->defs + (size_t)j * p->V;
        for (int k = 0; k < p->V; ++k) {
            const int32_t r = dj[k];
            if (r == R || s->live[r]) continue;
            s->live[r] = 2; /* born now (2 until the dead-def check below) */
            add_widths(p, s->live_w, r, 1);
        }
        for (int f = 0; f < F; ++f) {
            const int32_t v = s->live_w[f] + p->live_through[f];
            if (v > s->peak[f]) s->peak[f] = v;
        }
        for (int k = 0; k < p->V; ++k) {
            const int32_t r = dj[k];
            if (r == R || !s->live[r]) continue;
            const int born = s->live[r] == 2;
            if (born) s->live[r] = 1;
            if (p->reg_live_out[r]) continue;
            if (s->remaining[r] == 0) {
                s->live[r] = 0;
                add_widths(p, s->live_w, r, -1);
            } else if (born && s->remaining[r] == 1) {
                add_kill(p, s, r);
            }
        }
        last = j;
        order[t] = j;
        if (!dead && over_limit(p, s->peak)) {
            dead = 1;
            if (p->stop_dead) break;
        }
    }
    for (int f = 0; f < F; ++f) peak_out[f] = s->peak[f];
    *stalls_out = stalls;
    *dead_out = dead;
    return issued > 0 ? cycle + 1 : cycle;
}

/* Run `ants` ants (seeds per ant) on problem `p`. Outputs: order[A, N] (sentinel N after the
 * last step), peak[A, F], length[A], stalls[A], dead[A]. Returns 0, or -1 if memory ran out. */
int colony_construct(const Problem *p, int32_t ants, const uint32_t *seed, const uint32_t *coin,
                     const uint8_t *may_stall, int32_t *order, int32_t *peak, int32_t *length,
                     int32_t *stalls, uint8_t *dead) {
    const size_t N1 = (size_t)p->N + 1, K1 = (size_t)p->K + 1, R1 = (size_t)p->R + 1;
    const size_t F = (size_t)p->F;
    Scratch s;
    void *blocks[24];
    int nb = 0, fail = 0;
#define ALLOC(field, count, type)                                  \
    do {                                                           \
        s.field = (type *)calloc((count) + 1, sizeof(type));       \
        blocks[nb++] = s.field;                                    \
        if (!s.field) fail = 1;                                    \
    } while (0)
    ALLOC(ready, K1, int32_t);
    ALLOC(ready_e, K1, int32_t);
    ALLOC(ready_def, K1 * F, int32_t);
    ALLOC(ready_kill, K1 * F, int32_t);
    ALLOC(slot_of, N1, int32_t);
    ALLOC(preds_left, N1, int32_t);
    ALLOC(earliest, N1, int32_t);
    ALLOC(kill, N1 * F, int32_t);
    ALLOC(remaining, R1, int32_t);
    ALLOC(users_xor, R1, int32_t);
    ALLOC(live_w, F, int32_t);
    ALLOC(peak, F, int32_t);
    ALLOC(ready_key, K1, float);
    ALLOC(score, K1, float);
    ALLOC(live, R1, uint8_t);
    ALLOC(eligible, K1, uint8_t);
    ALLOC(semi, K1, uint8_t);
#undef ALLOC
    if (!fail) {
        for (int32_t a = 0; a < ants; ++a) {
            int32_t *o = order + (size_t)a * p->N;
            for (int32_t i = 0; i < p->N; ++i) o[i] = p->N;
            length[a] = construct_one(p, &s, seed[a], coin[a], may_stall[a], o,
                                      peak + (size_t)a * p->F, stalls + a, dead + a);
        }
    }
    for (int i = 0; i < nb; ++i) free(blocks[i]);
    return fail ? -1 : 0;
}
