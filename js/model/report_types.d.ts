// Generated from python/gpuprofile/report/schema.py and diff_schema.py by
// `python -m gpuprofile.report.schema_gen --write`: do not edit by hand.
// The widget's summary is the report (gpuprofile.report/1) as JSON, plus its text.

export interface Report {
  schema: string;
  source: Source;
  partial: boolean;
  dropped: Dropped | null;
  capture_errors: string[];
  notices: Notice[];
  hardware: HardwareRoofs;
  gauges: Gauge[];
  hints: Hint[];
  idle_by_cause: Record<string, number>;
  roofline: Roofline;
  ranks: RankReport[];
  distributed: Job | null;
  inference: Record<string, unknown> | null;
  workload?: Workload | null;
  no_findings?: string;
  allocator?: AllocatorState[];
  baseline?: DiffDocument;
}

export interface Source {
  path: string | null;
  format: string;
  version: string | null;
}

/**
 * Recorded windows dropped unread once the kept ones passed --max-events.
 */
export interface Dropped {
  windows: number;
  events: number | null;
  max_events: number;
}

export interface Notice {
  kind: string;
  text: string;
}

/**
 * ``Hardware.to_dict()``: the roofs the report was measured against.
 */
export interface HardwareRoofs {
  name: string;
  source: string;
  peak_flops: Record<string, number>;
  dram_bytes_per_s: number | null;
  link_bytes_per_s: number | null;
  peer_link_bytes_per_s: number | null;
  sm_count: number | null;
  l2_bytes: number | null;
  memory_bytes: number | null;
  citation: string | null;
  notes: string;
}

export interface Gauge {
  key: string;
  label: string;
  rank: number;
  value: number | null;
  unit: string;
  roof: number | null;
  roof_label: string;
  roof_source: string | null;
  note: string;
  fraction: number | null;
}

/**
 * ``analyses.hints.Hint.to_dict()``.
 */
export interface Hint {
  kind: string;
  title: string;
  severity: string;
  gain_ns: number;
  gain_method: string;
  confidence: string;
  explanation: string;
  numbers: Record<string, number | string | boolean | null>;
  fix: string[];
  code: string;
  evidence: Evidence[];
  rank: number | null;
  related: string[];
  modules?: string[];
  sources?: SourceRef[];
}

export interface Evidence {
  table: string;
  rank: number;
  event_ids: number[];
  windows: [number, number][];
  label: string;
}

/**
 * A line of the user's code: ``file`` is "cell [5]" for a notebook cell (see
 * analyses/frames.py), else the file's path.
 */
export interface SourceRef {
  file: string;
  line: number;
  function: string;
}

export interface Roofline {
  coverage: number | null;
  points: RooflinePoint[];
  missing_flops: string;
}

export interface RooflinePoint {
  key: string;
  level: string;
  name: string;
  shapes: string;
  rank: number;
  count: number;
  time_ns: number;
  flops: number | null;
  bytes: number | null;
  flops_source: string;
  bytes_source: string;
  precision: string;
  tensor_cores: boolean;
  intensity: number | null;
  achieved_flops_per_s: number | null;
  achieved_bytes_per_s: number | null;
  bound: string;
  roof: string | null;
  attainable_flops_per_s: number | null;
  pct_of_roof: number | null;
  time_at_roof_ns: number | null;
  saved_ns: number | null;
  event_ids: number[];
  modules?: string[];
  sources?: SourceRef[];
  label?: string;
}

export interface RankReport {
  rank: number;
  devices: Device[];
  wall_ns: number;
  gpu: GpuTime | null;
  counts: Counts;
  top_kernels: TopKernel[];
  top_ops: NameTotal[];
  copies: Copies[];
  sampled: Sampled | null;
  idle_by_cause: Record<string, number>;
  distributed: RankJob | null;
  modules?: ModuleRow[];
  phases?: Phases | null;
  memory?: MemoryUse | null;
}

export interface Device {
  id: number | null;
  name: string | null;
  memory_bytes: number | null;
  sm_count: number | null;
  compute_capability: string | null;
}

export interface GpuTime {
  window_ns: number;
  busy_ns: number;
  idle_ns: number;
  busy_pct: number | null;
  compute_ns: number;
  non_compute_ns: number;
  steps: GpuStep[];
}

export interface GpuStep {
  name: string;
  window_ns: number;
  busy_ns: number;
  idle_ns: number;
}

export interface Counts {
  ops: number;
  runtime: number;
  kernels: number;
  memcpy: number;
  memset: number;
}

export interface TopKernel {
  name: string;
  count: number;
  total_ns: number;
  class: string;
  measured: Record<string, number | null> | null;
  class_reason?: string;
  label?: string;
}

export interface NameTotal {
  name: string;
  count: number;
  total_ns: number;
  modules?: string[];
}

export interface Copies {
  kind: string;
  count: number;
  bytes: number | null;
  total_ns: number;
  gbps: number | null;
}

export interface Sampled {
  interval_s: number | null;
  dropped: number;
  counters: Counter[];
  missing: Record<string, string>;
}

export interface Counter {
  name: string;
  device: number;
  unit: string;
  min: number | null;
  mean: number | null;
  max: number | null;
  count: number;
}

/**
 * A rank's share of the job view; None for one rank.
 */
export interface RankJob {
  clock_offset_ns: number;
  bubble_fraction: number | null;
  wait_ns: number;
  exposed_comm_ns: number;
  comm_compute_overlap: number | null;
}

/**
 * An nn.Module's share of a rank (analyses/modules.py). Times are inclusive of the
 * modules it calls; backward is the autograd work its forward ops produced.
 */
export interface ModuleRow {
  path: string;
  type: string;
  depth: number;
  calls: number;
  forward_ns: number;
  backward_ns: number;
  self_ns: number;
  gpu_ns: number;
  flops: number | null;
  achieved_flops_per_s: number | null;
  pct_of_roof: number | null;
  alloc_bytes: number | null;
  peak_bytes: number | null;
  evidence: Evidence[];
}

/**
 * A rank's wall time split by phase; the four add up to the wall.
 */
export interface Phases {
  forward_ns: number;
  backward_ns: number;
  optimizer_ns: number;
  other_ns: number;
}

/**
 * A rank's memory in use on its main allocator device (report: RankReport.memory).
 */
export interface MemoryUse {
  device: number;
  before_bytes: number;
  categories: string[];
  times_ns: number[];
  by_category: Record<string, number[]>;
  peak: MemoryMoment;
  end: MemoryMoment;
  known_roles: number;
  failure?: MemoryFailure | null;
  note?: string;
}

/**
 * What was live at one moment: by category, by module, and the largest blocks.
 */
export interface MemoryMoment {
  time_ns: number;
  total_bytes: number;
  by_category: Record<string, number>;
  by_module: ModuleBytes[];
  largest: LiveBlock[];
}

export interface ModuleBytes {
  module: string;
  bytes: number;
}

/**
 * A block live at a moment: its size, category, the module and op that allocated it.
 */
export interface LiveBlock {
  bytes: number;
  category: string;
  module: string;
  op: string;
  line: string;
  allocated_ns: number | null;
}

/**
 * The capture's code ran out of memory: what it asked for and what would free it.
 */
export interface MemoryFailure {
  error: string;
  requested_bytes: number | null;
  fixes: MemoryFix[];
  needed_bytes?: number | null;
  op?: string;
  module?: string;
  line?: string;
}

export interface MemoryFix {
  fix: string;
  frees_bytes: number;
  why: string;
  enough?: boolean | null;
}

/**
 * The job view of several ranks (report/distributed.py).
 */
export interface Job {
  world_size: number | null;
  ranks_present: number[];
  missing_ranks: number[];
  clock: Clock;
  stragglers: Straggler[];
  pipeline: Pipeline | null;
  collectives: Collective[];
  steps: JobStep[];
}

export interface Clock {
  method: string;
  residual_ns: number | null;
  collectives: number;
}

export interface Straggler {
  rank: number;
  wait_caused_ns: number;
  arrived_last: number;
  cause: string;
}

export interface Pipeline {
  stages: number;
  stage_ranks: number[];
  microbatches: number;
  theoretical_bubble_fraction: number | null;
  bubble_fraction: number | null;
  excess_bubble_fraction: number | null;
  bottleneck_rank: number;
}

export interface Collective {
  group: string;
  name: string;
  count: number;
  bytes: number | null;
  mean_wait_ns: Record<string, number | null>;
  alg_bytes_per_s: number | null;
  bus_bytes_per_s: number | null;
  link_roof_bytes_per_s: number | null;
  pct_of_link_roof: number | null;
}

export interface JobStep {
  step: number | null;
  start_ns: number;
  end_ns: number;
  ranks: StepRank[];
}

export interface StepRank {
  rank: number;
  compute_ns: number;
  wait_ns: number;
  bubble_fraction: number | null;
}

/**
 * What the program is, each field decided from evidence in the trace
 * (analyses/workload.py); ``evidence`` holds one sentence per decision.
 */
export interface Workload {
  phase: string;
  engine: string | null;
  parallelism: string[];
  execution: string;
  device: string;
  evidence: string[];
  optimizers?: string[];
}

export interface AllocatorState {
  device: number;
  reserved_bytes: number;
  allocated_bytes: number;
  requested_bytes: number;
  pending_free_bytes: number;
  inactive_bytes: number;
  fragmentation: number | null;
  segments: number;
  large_segments: number;
  expandable: boolean;
  largest_blocks?: AllocatorBlock[];
  largest_free_block?: number;
  oom?: AllocatorOom | null;
}

export interface AllocatorBlock {
  address: number;
  size: number;
  requested_size: number;
  state: string;
  stream: number;
  frames?: AllocatorFrame[];
}

export interface AllocatorFrame {
  filename: string;
  line: number;
  name: string;
}

export interface AllocatorOom {
  time_ns: number | null;
  device_free: number | null;
  size: number | null;
  frames?: AllocatorFrame[];
}

/**
 * Run b against run a (a: the baseline).
 */
export interface DiffDocument {
  schema: string;
  a: DiffRun;
  b: DiffRun;
  summary: DiffSummary;
  kernels: DiffRow[];
  ops: DiffRow[];
  hints: DiffHints;
  roofline: DiffPoint[];
  notes: string[];
  memory?: DiffMemory[];
}

/**
 * One side of the diff: what was read, its ranks and devices, its recorded run.
 */
export interface DiffRun {
  path: string | null;
  format: string;
  ranks: number;
  devices: string[];
  run: DiffRunName | null;
}

/**
 * How the history names a recorded run (store/history.py ``Run.name()``).
 */
export interface DiffRunName {
  id: string;
  label: string | null;
  time: number;
}

/**
 * Whole-job totals; a GPU figure is None for a run without a GPU timeline.
 */
export interface DiffSummary {
  wall_ns: DiffChange;
  busy_ns: DiffChange;
  idle_ns: DiffChange;
  step_ns: DiffStepChange | null;
  idle_by_cause: Record<string, DiffIdleChange>;
}

/**
 * A figure in a and in b: delta = b - a, ratio = b / a (None when a is 0 or unknown).
 */
export interface DiffChange {
  a: number | null;
  b: number | null;
  delta: number | null;
  ratio: number | null;
}

/**
 * The median step of each run (DiffChange's fields), the steps each side has, and the
 * bootstrap interval of b/a's ratio of median steps with its verdict: both None with too
 * few steps on a side.
 */
export interface DiffStepChange {
  a: number | null;
  b: number | null;
  delta: number | null;
  ratio: number | null;
  source: DiffPair;
  count: DiffCounts;
  interval: number[] | null;
  confidence: number;
  verdict: "faster" | "slower" | "within noise" | null;
}

/**
 * Where each side's steps came from; None without steps.
 */
export interface DiffPair {
  a: string | null;
  b: string | null;
}

export interface DiffCounts {
  a: number;
  b: number;
}

/**
 * GPU idle time of one cause in a and in b, in ns.
 */
export interface DiffIdleChange {
  a: number;
  b: number;
  delta: number;
}

/**
 * A kernel or op in both runs (or one), its time and count in each.
 */
export interface DiffRow {
  name: string;
  a_ns: number;
  b_ns: number;
  delta_ns: number;
  a_count: number;
  b_count: number;
  matched_by: "name" | "only in a" | "only in b" | "position" | "role";
  b_name: string | null;
  label?: string;
  b_label?: string | null;
}

export interface DiffHints {
  fixed: DiffHint[];
  new: DiffHint[];
  kept: DiffHint[];
  unjudged?: DiffHint[];
}

/**
 * A hint fixed, new or kept: its key across runs and its title and gain in each.
 */
export interface DiffHint {
  key: string;
  kind: string;
  title: string;
  a_title: string | null;
  b_title: string | null;
  a_gain_ns: number | null;
  b_gain_ns: number | null;
}

/**
 * A roofline point (by key) whose % of roof or achieved FLOP/s moved.
 */
export interface DiffPoint {
  key: string;
  a: DiffPointFigures;
  b: DiffPointFigures;
}

export interface DiffPointFigures {
  pct_of_roof: number | null;
  achieved_flops_per_s: number | null;
  time_ns: number;
  count: number;
  roof?: string | null;
}

/**
 * Peak memory of one module (its row's peak_bytes), or of the whole run ("peak"), in a
 * and in b; None where that run recorded no memory (--memory) or lacks the module.
 */
export interface DiffMemory {
  module: string;
  a_bytes: number | null;
  b_bytes: number | null;
  delta: number | null;
}

/**
 * Beside the report: its text; the roofline chart and the module tree laid out (None: no
 * module rows, no view); the baseline's step verdict. A timeline alone (no report) carries
 * only ``text``. The widget sends it through ``msgspec.to_builtins`` (the layout's
 * dataclasses become dicts).
 */
export interface SummaryExtras {
  memory_layout?: MemoryLayout | null;
  module_layout?: ModuleLayout | null;
  roofline_layout?: RooflineLayout;
  step_noise?: StepNoise | null;
  text?: string;
  workload_line?: string | null;
}

export interface MemoryLayout {
  rank: number;
  title: string;
  width: number;
  height: number;
  plot: [number, number, number, number];
  areas: Area[];
  x_ticks: MemoryTick[];
  y_ticks: MemoryTick[];
  markers: Marker[];
}

/**
 * A category's band: its polygon (the top edge left to right, then the bottom back).
 */
export interface Area {
  category: string;
  colour: number;
  points: [number, number][];
  legend: Label;
  swatch: [number, number];
}

/**
 * A label as SVG draws it: text, baseline anchor (x, y), text-anchor, rotation in degrees
 * about the anchor, font size in px; ``box`` is its padded box's corners on the chart.
 */
export interface Label {
  text: string;
  x: number;
  y: number;
  anchor: "end" | "middle" | "start";
  angle: number;
  font: number;
  box: [number, number][];
}

export interface MemoryTick {
  at: number;
  label: Label;
}

/**
 * A vertical line at a moment: the peak, or the failure.
 */
export interface Marker {
  x: number;
  top: number;
  label: Label;
  kind: string;
}

/**
 * The module view of a report: one tree per rank that has module rows (none: no view).
 */
export interface ModuleLayout {
  width: number;
  bar_x: number;
  bar_w: number;
  row_h: number;
  trees: ModuleTree[];
}

/**
 * One rank's tree: rows in the order drawn (parents before children, siblings largest
 * first); ``more`` the line that counts the rows left out, None when none were.
 */
export interface ModuleTree {
  rank: number;
  height: number;
  rows: ModulePlace[];
  more: string | null;
  scale_ns: number;
}

/**
 * A module row of the tree: ``index`` is its place in ``report.ranks[i].modules``;
 * ``level`` its nesting in the tree drawn; ``y`` its row's top. ``title`` the full path and
 * numbers (a tooltip).
 */
export interface ModulePlace {
  index: number;
  path: string;
  level: number;
  y: number;
  label: Label;
  forward: Bar;
  backward: Bar;
  value: Label;
  title: string;
}

/**
 * A bar's part, px: from ``x`` for ``width`` (0: nothing to draw).
 */
export interface Bar {
  x: number;
  width: number;
}

export interface RooflineLayout {
  width: number;
  height: number;
  plot: Plot;
  x: Axis;
  y: Axis;
  roofs: Roof[];
  memory_label: Label | null;
  memory_line: [number, number][];
  ridges: Ridge[];
  points: PointPlace[];
  levels: string[];
  empty: string | null;
  roofs_missing: string | null;
  roofs_text: string;
  unplotted: string | null;
}

/**
 * The plot area inside the chart, px.
 */
export interface Plot {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

export interface Axis {
  domain: [number, number];
  ticks: Tick[];
  title: Label;
}

export interface Tick {
  value: number;
  at: number;
  label: Label;
}

/**
 * A roof: ``key`` is "dram" for the memory roof drawn alone, else the precisions sharing a
 * compute peak ("fp16/bf16"). ``line`` in data space and ``path`` in px are clipped to the
 * plot: up the memory slope to the ridge, then flat; [] when it lies outside.
 */
export interface Roof {
  key: string;
  peak: number | null;
  ridge: number | null;
  line: [number, number][];
  path: [number, number][];
  title: string;
  label: Label | null;
}

/**
 * Where a compute roof meets the memory roof, with a drop line to the x axis. ``label`` is
 * None where it would cover a line or a label: ``title`` (the tooltip) still says it.
 */
export interface Ridge {
  roof: string;
  intensity: number;
  peak: number;
  at: [number, number];
  drop: [[number, number], [number, number]];
  title: string;
  label: Label | null;
}

/**
 * A report point on the chart, at the same index as in ``Report.roofline.points``:
 * ``x``, ``y`` (px) and ``r`` when plotted, else why not; ``note`` a sentence the point's
 * details add (above the DRAM roof).
 */
export interface PointPlace {
  plotted: boolean;
  reason: string;
  x: number | null;
  y: number | null;
  r: number;
  bound: string;
  level: string;
  note: string | null;
}

/**
 * The widget's ``summary.step_noise`` (a TypedDict: the widget's trait takes it as is, and
 * schema_gen types it for the JS).
 */
export interface StepNoise {
  text: string;
  verdict: string;
}

/**
 * A lane of the widget's timeline (widget/timeline.py builds them; the widget sends them as
 * builtins, and schema_gen types them for the JS). ``group`` is its group's identity
 * (collapsing keys on it), ``group_label`` what the group's header says under its rank's,
 * ``title`` the lane in one line. A GPU lane has device and stream, a CPU lane pid and tid, a
 * counter lane device, unit and its finite extremes (None: no finite sample); the fields a
 * kind lacks are left out of its JSON. Mutable: ``rows`` (sub-rows) and a counter's extremes
 * are known only once its events are laid out.
 */
export interface Lane {
  id: number;
  rank: number;
  kind: "counter" | "cpu" | "gpu";
  group: string;
  group_label: string;
  label: string;
  title: string;
  rows: number;
  device?: number | null;
  stream?: number | null;
  pid?: number | null;
  tid?: number | null;
  unit?: string | null;
  min?: number | null;
  max?: number | null;
}

/** The widget's summary: the report and what the widget adds (widget/widget.py). */
export type Summary = Partial<Report> & SummaryExtras;
