// Native ant construction on the CPU: an XLA FFI custom call ("jaxsched_construct") that builds
// every ant's schedule of one or more regions, one ant after another, with the rules and the
// random stream of `construct_ants` in jaxsched/colony/construction/construct.py, bit for bit.
//
// Bit-identity with the `lax` path:
//   * The same state machine: compact ready list with swap-remove, release of successors into
//     the next slots, the register update (`issue.register_update`; in sequence here, which
//     equals it since an instruction's uses and defs are unique), issue timing, death. Sentinel
//     writes of the `lax` path (instruction N, register R, slot K) only touch dummy rows that
//     are never read, so they are skipped here.
//   * The same float32 operations in the same order (compiled with -ffp-contract=off, so
//     every operation is as written): each product is rounded before it is added, as the
//     `lax` path rounds them apart behind `antstate.rounded`.
//   * The roulette runs on integer weights (exact prefix sums) and the random numbers are the
//     `draws.uniform` hash of the per-ant seeds the caller drew with `draws.make_seeds`.
//
// Batching: every operand and result has the same leading batch axes (`jax.vmap` with
// vmap_method="broadcast_all"); regions are solved one after another.
//
// The packed scalar operands (`ints`, `floats`) are laid out by the Python side's tables
// (`native.INTS`, `native.FLOATS`): the build generates construct_layout.h from them
// (`native.layout_header`), the kernel reads every value by its name there and checks the
// operands' sizes, and the loader checks the layout the library reports
// (`JaxschedConstructLayout`) against the tables.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "construct_layout.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int32_t kBig = 1 << 30;

inline uint32_t hash32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// `draws.uniform`: f32 in [0, 1) from a seed and the step (`draws.hash32` above).
inline float uniform01(uint32_t seed, int32_t step) {
  uint32_t bits = hash32(seed + static_cast<uint32_t>(step) * 0x9E3779B9u);
  return static_cast<float>(bits >> 8) * (1.0f / static_cast<float>(1 << 24));
}

// XLA's f32 -> s32 conversion: truncation, saturating, NaN -> 0.
inline int32_t to_i32(float x) {
  if (std::isnan(x)) return 0;
  if (x >= 2147483648.0f) return INT32_MAX;
  if (x <= -2147483648.0f) return INT32_MIN;
  return static_cast<int32_t>(x);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    exp = 113;
    while (!(man & 0x400u)) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// One region's inputs (pointers into the batch's buffers) and sizes.
struct Region {
  int32_t N, K, R, F, D, U, V;  // arrays have N + 1, K + 1, R + 1 rows
  int32_t n, steps, timed, issue_width, init_count;
  bool active, dynamic;
  const int32_t *succ, *succ_lat, *num_preds, *uses, *defs, *def_wf, *reg_wf;
  const int32_t *reg_num_uses, *reg_users_xor, *live_through, *init_ready, *init_kill;
  const int32_t *rp_limit, *soft_limit;
  const bool *live_in, *live_out;
  const float *key, *wk, *wb;
  const void* tau;  // float or uint16_t (f16 bits)
  float q0, stall_budget, ws, wl, den, ww, rp_damping, overflow_damping, score_floor;
};

inline float tau_value(float x) { return x; }
inline float tau_value(uint16_t x) { return half_to_float(x); }

// `decision._stall_damping`: max((G - 2w) / G, 1 / G).
inline float stall_damping(float w, float g) { return std::max((g - 2.0f * w) / g, 1.0f / g); }

// One ant's construction state (`antstate.AntsState`), per-file arrays minor in the file.
struct Ant {
  std::vector<int32_t> ids, e, born, kill;  // ready slots [K + 1] ([K + 1, F])
  std::vector<float> key;                   // [K + 1]
  std::vector<int32_t> slot_of, preds_left, earliest, kill_i;  // [N + 1] ([N + 1, F])
  std::vector<int32_t> remaining, users_xor;                   // [R + 1]
  std::vector<uint8_t> live;                                   // [R + 1]
  std::vector<int32_t> live_w, peak;                           // [F]
  int32_t count = 0, last = 0, cycle = 0, issued = 0, stalls = 0;
  bool dead = false;
  // Decision scratch per slot.
  std::vector<float> score, extra;
  std::vector<int32_t> csum, kill_sum;
  std::vector<uint8_t> flags;
};

enum : uint8_t { kEligible = 1, kSemi = 2, kOver = 4, kRaises = 8 };

// `construct.init_ants` for one ant (the template every ant of the region copies).
void init_ant(const Region& g, Ant& a) {
  const int32_t N = g.N, K = g.K, R = g.R, F = g.F;
  a.ids.assign(g.init_ready, g.init_ready + K + 1);
  a.e.assign(K + 1, 0);
  a.key.resize(K + 1);
  a.born.resize(static_cast<size_t>(K + 1) * F);
  a.kill.resize(static_cast<size_t>(K + 1) * F);
  a.kill_i.resize(static_cast<size_t>(N + 1) * F);
  for (int32_t i = 0; i <= N; ++i)
    for (int32_t f = 0; f < F; ++f)
      a.kill_i[static_cast<size_t>(i) * F + f] = g.init_kill[static_cast<size_t>(f) * (N + 1) + i];
  a.slot_of.assign(N + 1, K);
  for (int32_t k = 0; k <= K; ++k) {
    const int32_t id = a.ids[k];
    a.key[k] = g.key[id];
    for (int32_t f = 0; f < F; ++f) {
      a.born[static_cast<size_t>(k) * F + f] = g.def_wf[static_cast<size_t>(f) * (N + 1) + id];
      a.kill[static_cast<size_t>(k) * F + f] = a.kill_i[static_cast<size_t>(id) * F + f];
    }
    a.slot_of[id] = k;
  }
  a.slot_of[N] = K;
  a.count = g.init_count;
  a.preds_left.assign(g.num_preds, g.num_preds + N + 1);
  a.earliest.assign(N + 1, 0);
  a.remaining.assign(g.reg_num_uses, g.reg_num_uses + R + 1);
  a.users_xor.assign(g.reg_users_xor, g.reg_users_xor + R + 1);
  a.live.resize(R + 1);
  a.live_w.assign(F, 0);
  for (int32_t r = 0; r <= R; ++r) {
    a.live[r] = g.live_in[r];
    if (g.live_in[r])
      for (int32_t f = 0; f < F; ++f) a.live_w[f] += g.reg_wf[static_cast<size_t>(r) * F + f];
  }
  a.peak.resize(F);
  for (int32_t f = 0; f < F; ++f) a.peak[f] = a.live_w[f] + g.live_through[f];
  a.last = N;
  a.cycle = a.issued = a.stalls = 0;
  a.dead = false;
  a.score.assign(K + 1, 0.0f);
  a.extra.assign(K + 1, 0.0f);
  a.csum.assign(K + 1, 0);
  a.kill_sum.assign(K + 1, 0);
  a.flags.assign(K + 1, 0);
}

// The kernel for a pheromone type (float, or uint16_t holding f16) and a register file count
// fixed at compile time (FF > 0; FF = 0: the region's).
template <typename Tau, int FF>
struct Kernel {
  static int32_t files(const Region& g) { return FF > 0 ? FF : g.F; }

  // `decision._dynamic_terms` (the per-file kill and born widths and the wait, each over its
  // maximum over the slots, weighted) into a.extra; only when one of their weights is set.
  static void dynamic_terms(const Region& g, Ant& a, int32_t cycle) {
    const int32_t F = files(g), count = a.count;
    float m = 0.0f;
    for (int32_t k = 0; k < count; ++k)
      m = std::max(m, std::max(static_cast<float>(a.e[k] - cycle), 0.0f));
    const float inv_wait = 1.0f / std::max(m, 1.0f);
    float inv_kill[layout::kMaxRegs], inv_born[layout::kMaxRegs];
    for (int32_t f = 0; f < F; ++f) {
      int32_t mk = 0, mb = 0;
      for (int32_t k = 0; k < count; ++k) {
        mk = std::max(mk, a.kill[static_cast<size_t>(k) * F + f]);
        mb = std::max(mb, a.born[static_cast<size_t>(k) * F + f]);
      }
      inv_kill[f] = 1.0f / std::max(static_cast<float>(mk), 1.0f);
      inv_born[f] = 1.0f / std::max(static_cast<float>(mb), 1.0f);
    }
    for (int32_t k = 0; k < count; ++k) {
      float terms = 0.0f;
      for (int32_t f = 0; f < F; ++f) {
        const float sk = static_cast<float>(a.kill[static_cast<size_t>(k) * F + f]) * inv_kill[f];
        const float sb = static_cast<float>(a.born[static_cast<size_t>(k) * F + f]) * inv_born[f];
        terms = terms + (g.wk[f] * sk + g.wb[f] * sb);
      }
      const float sw = std::max(static_cast<float>(a.e[k] - cycle), 0.0f) * inv_wait;
      a.extra[k] = terms + g.ww * sw;
    }
  }

  // Register effect of every slot (`decision._candidates`): flags semi-ready (against
  // `cycle`), over the soft limit, raises the RP; a.kill_sum. Returns whether a ready slot
  // stays within the soft limit; *any_ready / *min_e: a slot is ready / the first earliest
  // cycle; *calm / *safe: bit 0 among ready slots, bit 1 among all, a slot does not raise
  // the RP / stays within the soft limit; *kill_max: the largest kill width.
  static bool effects(const Region& g, Ant& a, int32_t cycle, bool* any_ready, int32_t* min_e,
                      int* calm, int* safe, int32_t* kill_max) {
    const int32_t F = files(g), count = a.count;
    // over: live_w + born - kill + live_through > soft_limit, i.e. born - kill > room.
    int32_t room[layout::kMaxRegs];
    for (int32_t f = 0; f < F; ++f) room[f] = g.soft_limit[f] - a.live_w[f] - g.live_through[f];
    const int32_t* __restrict born_k = a.born.data();
    const int32_t* __restrict kill_k = a.kill.data();
    const int32_t* __restrict e_k = a.e.data();
    int32_t* __restrict kill_sums = a.kill_sum.data();
    uint8_t* __restrict flags = a.flags.data();
    bool ready_any = false, safe_ready = false;
    int32_t e_min = kBig, k_max = 0;
    int calm_bits = 0, safe_bits = 0;
    for (int32_t k = 0; k < count; ++k) {
      const int32_t* born = born_k + static_cast<size_t>(k) * F;
      const int32_t* kill = kill_k + static_cast<size_t>(k) * F;
      bool over = false;
      int32_t born_sum = 0, kill_sum = 0;
      for (int32_t f = 0; f < F; ++f) {
        over |= born[f] - kill[f] > room[f];
        born_sum += born[f];
        kill_sum += kill[f];
      }
      const int32_t e = e_k[k];
      const bool semi = e > cycle, raises = born_sum > kill_sum;
      ready_any |= !semi;
      e_min = std::min(e_min, e);
      safe_ready |= !semi && !over;
      calm_bits |= (!semi && !raises) | (!raises) << 1;
      safe_bits |= (!semi && !over) | (!over) << 1;
      kill_sums[k] = kill_sum;
      k_max = std::max(k_max, kill_sum);
      flags[k] = (semi ? kSemi : 0) | (over ? kOver : 0) | (raises ? kRaises : 0);
    }
    *any_ready = ready_any, *min_e = e_min, *calm = calm_bits, *safe = safe_bits;
    *kill_max = k_max;
    return safe_ready;
  }

  // `decision.decide`: candidates (`decision._candidates`), scores (`decision._scores`) and
  // the pick (`decision.pick_slot`). Returns the slot; *cycle / *issued: the ant's cycle
  // after a necessary stall and the instructions already issued in it.
  static int32_t decide(const Region& g, Ant& a, int32_t t, uint32_t seed, uint32_t coin,
                        bool may_stall, int32_t* cycle_out, int32_t* issued_out) {
    const int32_t count = a.count;
    bool any_ready;
    int32_t min_e, kill_max;
    int calm, safe;
    int32_t cycle = a.cycle;
    bool safe_ready = effects(g, a, cycle, &any_ready, &min_e, &calm, &safe, &kill_max);
    if (!any_ready) {  // nothing ready: stall to the first earliest cycle, then look again
      cycle = std::max(a.cycle, min_e);
      safe_ready = effects(g, a, cycle, &any_ready, &min_e, &calm, &safe, &kill_max);
    }
    *cycle_out = cycle;
    *issued_out = cycle != a.cycle ? 0 : a.issued;
    // Eligible: ready, or semi-ready where stalls are allowed or nothing ready is safe.
    const bool all_eligible = may_stall || !safe_ready;
    const int among = all_eligible ? 2 : 1;
    const bool calm_exists = calm & among, safe_exists = safe & among;
    if (g.dynamic) dynamic_terms(g, a, cycle);
    // Scores: tau[last, j] * (1 + key), damped; the best one (first slot of it).
    const float luc_den = std::max(static_cast<float>(kill_max), 1.0f);
    const float gb = g.stall_budget;
    const float damp_taken = stall_damping(static_cast<float>(a.stalls), gb);
    const Tau* tau_row = static_cast<const Tau*>(g.tau) + static_cast<size_t>(a.last) * (g.N + 1);
    float best = 0.0f;  // ineligible slots score 0 (scores are positive for score_floor > 0)
    int32_t best_slot = -1, last_eligible = 0;
    for (int32_t k = 0; k < count; ++k) {
      const uint8_t fl = a.flags[k];
      if ((fl & kSemi) && !all_eligible) {
        a.score[k] = 0.0f;
        continue;
      }
      a.flags[k] = fl | kEligible;
      last_eligible = k;
      const float luc = static_cast<float>(a.kill_sum[k]) / luc_den;
      float num = a.key[k] * g.ws + g.wl * luc;
      if (g.dynamic) num = num + a.extra[k];
      float score = tau_value(tau_row[a.ids[k]]) * (1.0f + num / g.den);
      if ((fl & kRaises) && calm_exists) score = score * g.rp_damping;
      if ((fl & kOver) && safe_exists) score = score * g.overflow_damping;
      if (fl & kSemi) {
        const float wait = static_cast<float>(a.e[k] - cycle);
        score = score * stall_damping(wait, gb) * damp_taken;
      }
      score = std::max(score, g.score_floor);
      a.score[k] = score;
      if (score > best) best = score, best_slot = k;
    }
    // Exploit with probability q0: the first eligible slot of the best score.
    if (uniform01(coin, t) < g.q0) {
      if (best_slot >= 0) return best_slot;
      for (int32_t k = 0; k < count; ++k)
        if ((a.flags[k] & kEligible) && a.score[k] == best) return k;
      return count;
    }
    // Roulette on integer weights: 16 bits relative to the best score, at least 1.
    const float scale = std::max(best, 1e-30f);
    uint32_t total = 0;
    for (int32_t k = 0; k < count; ++k) {
      if (a.flags[k] & kEligible)
        total += static_cast<uint32_t>(1 + to_i32(a.score[k] / scale * 65535.0f));
      a.csum[k] = static_cast<int32_t>(total);  // inclusive prefix sum
    }
    const float u = uniform01(seed, t);
    const int32_t r = to_i32(u * static_cast<float>(static_cast<int32_t>(total)));
    int32_t below = 0;
    for (int32_t k = 0; k < count; ++k) below += a.csum[k] <= r;
    return std::min(below, last_eligible);
  }

  // Swap-remove slot `pick` (`construct._remove`): the last candidate moves into it.
  static void remove(const Region& g, Ant& a, int32_t pick, int32_t j) {
    const int32_t F = files(g), last_slot = a.count - 1, moved = a.ids[last_slot];
    a.ids[pick] = moved;
    a.e[pick] = a.e[last_slot];
    a.key[pick] = a.key[last_slot];
    for (int32_t f = 0; f < F; ++f) {
      a.born[static_cast<size_t>(pick) * F + f] = a.born[static_cast<size_t>(last_slot) * F + f];
      a.kill[static_cast<size_t>(pick) * F + f] = a.kill[static_cast<size_t>(last_slot) * F + f];
      a.born[static_cast<size_t>(last_slot) * F + f] = 0;
      a.kill[static_cast<size_t>(last_slot) * F + f] = 0;
    }
    a.ids[last_slot] = g.N;
    a.e[last_slot] = 0;
    a.key[last_slot] = 0.0f;
    a.slot_of[moved] = pick;
    a.slot_of[j] = g.K;
    a.count -= 1;
  }

  // Release j's successors (`construct._release`): the newly free ones take the next slots.
  static void release(const Region& g, Ant& a, int32_t j, int32_t issue_cycle) {
    const int32_t F = files(g), N = g.N;
    const int32_t* succ = g.succ + static_cast<size_t>(j) * g.D;
    const int32_t* lat = g.succ_lat + static_cast<size_t>(j) * g.D;
    for (int32_t i = 0; i < g.D; ++i) {
      const int32_t x = succ[i];
      if (x == N) continue;
      const int32_t left = a.preds_left[x] - 1;
      const int32_t e = std::max(a.earliest[x], issue_cycle + (g.timed ? lat[i] : 0));
      a.preds_left[x] = left;
      a.earliest[x] = e;
      if (left != 0) continue;
      const int32_t k = std::min(a.count, g.K);
      a.count += 1;
      a.ids[k] = x;
      a.e[k] = e;
      a.key[k] = g.key[x];
      for (int32_t f = 0; f < F; ++f) {
        a.born[static_cast<size_t>(k) * F + f] = g.def_wf[static_cast<size_t>(f) * (N + 1) + x];
        a.kill[static_cast<size_t>(k) * F + f] = a.kill_i[static_cast<size_t>(x) * F + f];
      }
      a.slot_of[x] = k;
    }
  }

  static void add_wf(const Region& g, int32_t* acc, int32_t r, int32_t sign) {
    const int32_t F = files(g);
    for (int32_t f = 0; f < F; ++f) acc[f] += sign * g.reg_wf[static_cast<size_t>(r) * F + f];
  }

  // The width register r kills now goes to its last user (in that user's ready slot too).
  static void add_kill(const Region& g, Ant& a, int32_t user, int32_t r) {
    if (user == g.N) return;
    add_wf(g, &a.kill_i[static_cast<size_t>(user) * files(g)], r, 1);
    const int32_t k = a.slot_of[user];
    if (k != g.K) add_wf(g, &a.kill[static_cast<size_t>(k) * files(g)], r, 1);
  }

  // j's registers (`issue.register_update`, then `construct._registers`' writes), in
  // sequence: uses first (a last use dies; a live register with one use left is killed by that last
  // user), defs born, the peak, then dead defs die (and a newborn with one use is killed by
  // it). Uses and defs are unique per instruction, so this equals the `lax` path's update
  // from the old values (a register both used and defined sees its use first there too).
  static void registers(const Region& g, Ant& a, int32_t j) {
    const int32_t R = g.R, F = files(g);
    const int32_t* u = g.uses + static_cast<size_t>(j) * g.U;
    const int32_t* d = g.defs + static_cast<size_t>(j) * g.V;
    int32_t* live_w = a.live_w.data();
    for (int32_t i = 0; i < g.U; ++i) {
      const int32_t r = u[i];
      if (r == R) continue;
      const int32_t rem = --a.remaining[r];
      const int32_t user = a.users_xor[r] ^= j;
      if (!a.live[r] || g.live_out[r]) continue;
      if (rem == 0) {
        a.live[r] = 0;
        add_wf(g, live_w, r, -1);
      } else if (rem == 1) {
        add_kill(g, a, user, r);
      }
    }
    for (int32_t v = 0; v < g.V; ++v) {
      const int32_t r = d[v];
      if (r == R || a.live[r]) continue;
      a.live[r] = 2;  // born now (2 until the dead-def check below)
      add_wf(g, live_w, r, 1);
    }
    for (int32_t f = 0; f < F; ++f)
      a.peak[f] = std::max(a.peak[f], live_w[f] + g.live_through[f]);
    for (int32_t v = 0; v < g.V; ++v) {
      const int32_t r = d[v];
      if (r == R) continue;
      const bool born = a.live[r] == 2;
      a.live[r] = 1;
      if (g.live_out[r]) continue;
      if (a.remaining[r] == 0) {
        a.live[r] = 0;
        add_wf(g, live_w, r, -1);
      } else if (born && a.remaining[r] == 1) {
        add_kill(g, a, a.users_xor[r], r);
      }
    }
  }

  // One step (`construct.apply_pick` after `decision.decide`): the ant issues the candidate it
  // picks.
  static void step(const Region& g, Ant& a, int32_t t, uint32_t seed, uint32_t coin,
                   bool may_stall, int32_t* order) {
    int32_t cycle, issued;
    const int32_t pick = decide(g, a, t, seed, coin, may_stall, &cycle, &issued);
    const int32_t j = a.ids[pick];
    // Issue timing (`issue.issue_timing`).
    const int32_t earliest = a.e[pick];
    const int32_t issue_cycle = std::max(cycle, earliest);
    if (earliest > cycle) a.stalls += issue_cycle - cycle;
    issued = (issue_cycle != cycle ? 0 : issued) + 1;
    const bool full = issued >= g.issue_width;
    a.cycle = full ? issue_cycle + 1 : issue_cycle;
    a.issued = full ? 0 : issued;
    remove(g, a, pick, j);
    release(g, a, j, issue_cycle);
    registers(g, a, j);
    for (int32_t f = 0; f < files(g); ++f) a.dead |= a.peak[f] > g.rp_limit[f];
    a.last = j;
    if (t < g.N) order[t] = j;
  }

  // All ants of one region. Outputs: order [A, N], peak [A, F], length/stalls/dead [A].
  static void region(const Region& g, int32_t ants, const uint32_t* seeds, Ant& proto, Ant& a,
                     int32_t* order, int32_t* peak, int32_t* length, int32_t* stalls,
                     bool* dead) {
    init_ant(g, proto);
    const int32_t steps = g.active ? std::min(g.steps, g.n) : 0;
    for (int32_t i = 0; i < ants; ++i) {
      a = proto;
      int32_t* o = order + static_cast<size_t>(i) * g.N;
      std::fill(o, o + g.N, g.N);
      const bool may_stall = seeds[2 * ants + i] != 0;
      for (int32_t t = 0; t < steps && a.count > 0; ++t)
        step(g, a, t, seeds[i], seeds[ants + i], may_stall, o);
      for (int32_t f = 0; f < g.F; ++f) peak[static_cast<size_t>(i) * g.F + f] = a.peak[f];
      length[i] = a.issued > 0 ? a.cycle + 1 : a.cycle;
      stalls[i] = a.stalls;
      dead[i] = a.dead;
    }
  }
};

template <typename Tau>
void run_region(const Region& g, int32_t ants, const uint32_t* seeds, Ant& proto, Ant& a,
                int32_t* order, int32_t* peak, int32_t* length, int32_t* stalls, bool* dead) {
  switch (g.F) {
    case 1:
      return Kernel<Tau, 1>::region(g, ants, seeds, proto, a, order, peak, length, stalls, dead);
    case 2:
      return Kernel<Tau, 2>::region(g, ants, seeds, proto, a, order, peak, length, stalls, dead);
    case 3:
      return Kernel<Tau, 3>::region(g, ants, seeds, proto, a, order, peak, length, stalls, dead);
    default:
      return Kernel<Tau, 0>::region(g, ants, seeds, proto, a, order, peak, length, stalls, dead);
  }
}

template <typename T>
const T* at(const ffi::AnyBuffer& b, size_t region, size_t per_region) {
  return reinterpret_cast<const T*>(b.untyped_data()) + region * per_region;
}

size_t last_dim(const ffi::AnyBuffer& b, int back = 1) {
  const auto dims = b.dimensions();
  return static_cast<size_t>(dims[dims.size() - back]);
}

ffi::Error Construct(ffi::AnyBuffer n, ffi::AnyBuffer succ, ffi::AnyBuffer succ_lat,
                     ffi::AnyBuffer num_preds, ffi::AnyBuffer uses, ffi::AnyBuffer defs,
                     ffi::AnyBuffer def_wf, ffi::AnyBuffer reg_wf, ffi::AnyBuffer reg_num_uses,
                     ffi::AnyBuffer reg_users_xor, ffi::AnyBuffer reg_live_in,
                     ffi::AnyBuffer reg_live_out, ffi::AnyBuffer live_through,
                     ffi::AnyBuffer init_ready, ffi::AnyBuffer init_count,
                     ffi::AnyBuffer init_kill, ffi::AnyBuffer tau, ffi::AnyBuffer key,
                     ffi::AnyBuffer ints, ffi::AnyBuffer floats, ffi::AnyBuffer seeds,
                     ffi::Result<ffi::AnyBuffer> order, ffi::Result<ffi::AnyBuffer> peak,
                     ffi::Result<ffi::AnyBuffer> length, ffi::Result<ffi::AnyBuffer> stalls,
                     ffi::Result<ffi::AnyBuffer> dead) {
  // Operands (B = product of the leading batch axes; N, K, R, D, U, V, F, A the last axes):
  //   n             int32[B]: the region's real instruction count
  //   succ          int32[B, N + 1, D]: successors, sentinel N
  //   succ_lat      int32[B, N + 1, D]: edge latencies
  //   num_preds     int32[B, N + 1]: in-degrees (dummy row: a huge count)
  //   uses, defs    int32[B, N + 1, U|V]: registers used / defined, sentinel R
  //   def_wf        int32[B, F, N + 1]: width each instruction defines, per file
  //   reg_wf        int32[B, R + 1, F]: width of each register in its file's column
  //   reg_num_uses  int32[B, R + 1]; reg_users_xor int32[B, R + 1]: XOR of its users' ids
  //   reg_live_in, reg_live_out  bool[B, R + 1]
  //   live_through  int32[B, F]
  //   init_ready    int32[B, K + 1]: the roots, sentinel N; init_count int32[B]
  //   init_kill     int32[B, F, N + 1]: width each instruction kills at the start
  //   tau           f32|f16[B, N + 1, N + 1]: pheromone (row N: the start)
  //   key           f32[B, N + 1]: static heuristic key
  //   ints          int32[B, layout::ints::size(F)]: the scalars of `layout::ints` by name
  //                 (timed, issue_width, num_steps, active), then its per-file blocks
  //                 (rp_limit[F], soft_limit[F]); construct_layout.h
  //   floats        f32[B, layout::floats::size(F)]: likewise `layout::floats` (q0,
  //                 stall_budget, the static weight sum, the last-use weight, the key
  //                 denominator, weight_wait, rp_damping, overflow_damping, score_floor,
  //                 dynamic (1: a kill/born/wait weight set); weight_kill[F], weight_born[F])
  //   seeds         uint32[B, 3, A]: roulette seed, exploitation coin, may_stall (0/1)
  // Results: order int32[B, A, N], peak int32[B, A, F], length, stalls int32[B, A],
  //          dead bool[B, A].
  const size_t B = n.element_count();
  const int32_t N1 = static_cast<int32_t>(last_dim(num_preds));
  const int32_t K1 = static_cast<int32_t>(last_dim(init_ready));
  const int32_t R1 = static_cast<int32_t>(last_dim(reg_num_uses));
  const int32_t F = static_cast<int32_t>(last_dim(live_through));
  const int32_t D = static_cast<int32_t>(last_dim(succ));
  const int32_t U = static_cast<int32_t>(last_dim(uses));
  const int32_t V = static_cast<int32_t>(last_dim(defs));
  const int32_t A = static_cast<int32_t>(last_dim(seeds));
  if (U > layout::kMaxRegs || V > layout::kMaxRegs || F > layout::kMaxRegs)
    return ffi::Error::InvalidArgument(
        "jaxsched_construct: too many uses, defs or files (native.MAX_REGS_PER_INSTRUCTION)");
  const bool f16 = tau.element_type() == ffi::DataType::F16;
  if (!f16 && tau.element_type() != ffi::DataType::F32)
    return ffi::Error::InvalidArgument("jaxsched_construct: tau must be f32 or f16");
  namespace li = layout::ints;
  namespace lf = layout::floats;
  const size_t nI = li::size(F), nF = lf::size(F);
  if (last_dim(ints) != nI || last_dim(floats) != nF)
    return ffi::Error::InvalidArgument(
        "jaxsched_construct: the ints / floats operands do not have the sizes of "
        "construct_layout.h (a library built from another layout)");
  Ant proto, ant;
  for (size_t b = 0; b < B; ++b) {
    Region g;
    g.N = N1 - 1, g.K = K1 - 1, g.R = R1 - 1, g.F = F, g.D = D, g.U = U, g.V = V;
    g.n = *at<int32_t>(n, b, 1);
    g.succ = at<int32_t>(succ, b, static_cast<size_t>(N1) * D);
    g.succ_lat = at<int32_t>(succ_lat, b, static_cast<size_t>(N1) * D);
    g.num_preds = at<int32_t>(num_preds, b, N1);
    g.uses = at<int32_t>(uses, b, static_cast<size_t>(N1) * U);
    g.defs = at<int32_t>(defs, b, static_cast<size_t>(N1) * V);
    g.def_wf = at<int32_t>(def_wf, b, static_cast<size_t>(F) * N1);
    g.reg_wf = at<int32_t>(reg_wf, b, static_cast<size_t>(R1) * F);
    g.reg_num_uses = at<int32_t>(reg_num_uses, b, R1);
    g.reg_users_xor = at<int32_t>(reg_users_xor, b, R1);
    g.live_in = at<bool>(reg_live_in, b, R1);
    g.live_out = at<bool>(reg_live_out, b, R1);
    g.live_through = at<int32_t>(live_through, b, F);
    g.init_ready = at<int32_t>(init_ready, b, K1);
    g.init_count = *at<int32_t>(init_count, b, 1);
    g.init_kill = at<int32_t>(init_kill, b, static_cast<size_t>(F) * N1);
    const size_t tau_size = static_cast<size_t>(N1) * N1;
    g.tau = f16 ? static_cast<const void*>(at<uint16_t>(tau, b, tau_size))
                : static_cast<const void*>(at<float>(tau, b, tau_size));
    g.key = at<float>(key, b, N1);
    const int32_t* iv = at<int32_t>(ints, b, nI);
    g.timed = iv[li::timed], g.issue_width = iv[li::issue_width], g.steps = iv[li::num_steps];
    g.active = iv[li::active] != 0;
    g.rp_limit = iv + li::block(li::rp_limit, F), g.soft_limit = iv + li::block(li::soft_limit, F);
    const float* fv = at<float>(floats, b, nF);
    g.q0 = fv[lf::q0], g.stall_budget = fv[lf::stall_budget];
    g.ws = fv[lf::static_weight_sum], g.wl = fv[lf::weight_last_use];
    g.den = fv[lf::key_denominator], g.ww = fv[lf::weight_wait];
    g.rp_damping = fv[lf::rp_damping], g.overflow_damping = fv[lf::overflow_damping];
    g.score_floor = fv[lf::score_floor], g.dynamic = fv[lf::dynamic] != 0.0f;
    g.wk = fv + lf::block(lf::weight_kill, F), g.wb = fv + lf::block(lf::weight_born, F);
    const size_t AN = static_cast<size_t>(A) * g.N, AF = static_cast<size_t>(A) * F;
    auto* out_order = reinterpret_cast<int32_t*>(order->untyped_data()) + b * AN;
    auto* out_peak = reinterpret_cast<int32_t*>(peak->untyped_data()) + b * AF;
    auto* out_length = reinterpret_cast<int32_t*>(length->untyped_data()) + b * A;
    auto* out_stalls = reinterpret_cast<int32_t*>(stalls->untyped_data()) + b * A;
    auto* out_dead = reinterpret_cast<bool*>(dead->untyped_data()) + b * A;
    const uint32_t* seed = at<uint32_t>(seeds, b, 3 * static_cast<size_t>(A));
    if (f16)
      run_region<uint16_t>(g, A, seed, proto, ant, out_order, out_peak, out_length, out_stalls,
                           out_dead);
    else
      run_region<float>(g, A, seed, proto, ant, out_order, out_peak, out_length, out_stalls,
                        out_dead);
  }
  return ffi::Error::Success();
}

}  // namespace

// The layout this library was built with (`native.check_layout` compares it with the tables).
extern "C" const char* JaxschedConstructLayout() { return layout::kText; }

XLA_FFI_DEFINE_HANDLER_SYMBOL(JaxschedConstruct, Construct,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()  // n
                                  .Arg<ffi::AnyBuffer>()  // succ
                                  .Arg<ffi::AnyBuffer>()  // succ_lat
                                  .Arg<ffi::AnyBuffer>()  // num_preds
                                  .Arg<ffi::AnyBuffer>()  // uses
                                  .Arg<ffi::AnyBuffer>()  // defs
                                  .Arg<ffi::AnyBuffer>()  // def_wf
                                  .Arg<ffi::AnyBuffer>()  // reg_wf
                                  .Arg<ffi::AnyBuffer>()  // reg_num_uses
                                  .Arg<ffi::AnyBuffer>()  // reg_users_xor
                                  .Arg<ffi::AnyBuffer>()  // reg_live_in
                                  .Arg<ffi::AnyBuffer>()  // reg_live_out
                                  .Arg<ffi::AnyBuffer>()  // live_through
                                  .Arg<ffi::AnyBuffer>()  // init_ready
                                  .Arg<ffi::AnyBuffer>()  // init_count
                                  .Arg<ffi::AnyBuffer>()  // init_kill
                                  .Arg<ffi::AnyBuffer>()  // tau
                                  .Arg<ffi::AnyBuffer>()  // key
                                  .Arg<ffi::AnyBuffer>()  // ints
                                  .Arg<ffi::AnyBuffer>()  // floats
                                  .Arg<ffi::AnyBuffer>()  // seeds
                                  .Ret<ffi::AnyBuffer>()  // order
                                  .Ret<ffi::AnyBuffer>()  // peak
                                  .Ret<ffi::AnyBuffer>()  // length
                                  .Ret<ffi::AnyBuffer>()  // stalls
                                  .Ret<ffi::AnyBuffer>()  // dead
);
