//! The task graph of `git tlv4 report` laid out as SVG: boxes and edge paths, as data for the
//! page's template (which draws them). Nothing here prints or writes a file.

use std::collections::BTreeMap;

use crate::cli::graph::{EdgeKind, Graph, Node};

/// Node size and gaps of the SVG graph, in pixels.
const NODE_W: f64 = 190.0;
const LINE_H: f64 = 16.0;
const GAP_X: f64 = 30.0;
const GAP_Y: f64 = 56.0;
const MARGIN: f64 = 20.0;

/// The graph laid out by ranks, top to bottom: each rank one row, its nodes ordered by the
/// mean position of what they wait for (one barycentre pass, which untangles most crossings of
/// pipeline graphs), rows centred. Returns boxes and edge paths for the template.
pub(super) fn layout(graph: &Graph) -> serde_json::Value {
    let ranks = graph.ranks();
    let lines = |n: &Node| crate::cli::graph::label(n).lines().count();
    let max_lines = graph.nodes.iter().map(lines).max().unwrap_or(1);
    let node_h = max_lines as f64 * LINE_H + 12.0;
    let widest = ranks.iter().map(Vec::len).max().unwrap_or(0);
    let width = MARGIN * 2.0 + widest as f64 * NODE_W + widest.saturating_sub(1) as f64 * GAP_X;
    let height =
        MARGIN * 2.0 + ranks.len() as f64 * node_h + ranks.len().saturating_sub(1) as f64 * GAP_Y;

    let mut deps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for e in graph.edges.iter().filter(|e| e.kind == EdgeKind::Depends) {
        deps.entry(e.to.as_str()).or_default().push(e.from.as_str());
    }
    // Position (centre x, top y) of each node.
    let mut pos: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    let mut boxes = Vec::new();
    for (r, nodes) in ranks.iter().enumerate() {
        let mut row: Vec<(&Node, f64)> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let xs: Vec<f64> = deps
                    .get(n.id.as_str())
                    .into_iter()
                    .flatten()
                    .filter_map(|d| pos.get(d).map(|p| p.0))
                    .collect();
                let key = if xs.is_empty() {
                    i as f64 * 1e-3
                } else {
                    xs.iter().sum::<f64>() / xs.len() as f64 + i as f64 * 1e-3
                };
                (*n, key)
            })
            .collect();
        row.sort_by(|a, b| a.1.total_cmp(&b.1));
        let row_w = row.len() as f64 * NODE_W + row.len().saturating_sub(1) as f64 * GAP_X;
        let left = (width - row_w) / 2.0;
        let y = MARGIN + r as f64 * (node_h + GAP_Y);
        for (i, (n, _)) in row.iter().enumerate() {
            let x = left + i as f64 * (NODE_W + GAP_X);
            pos.insert(n.id.as_str(), (x + NODE_W / 2.0, y));
            let (fill, stroke) = crate::cli::graph::colours(n.status);
            let label = crate::cli::graph::label(n);
            boxes.push(serde_json::json!({
                "id": n.id,
                "status": n.status,
                "kind": n.kind,
                "x": x, "y": y, "w": NODE_W, "h": node_h,
                "cx": x + NODE_W / 2.0,
                "fill": fill, "stroke": stroke,
                "lines": label.lines().enumerate().map(|(k, l)| serde_json::json!({
                    "text": l,
                    "y": y + 20.0 + k as f64 * LINE_H,
                    "bold": k == 0,
                })).collect::<Vec<_>>(),
            }));
        }
    }
    let edges: Vec<_> = graph
        .edges
        .iter()
        .filter_map(|e| {
            let (x1, y1) = *pos.get(e.from.as_str())?;
            let (x2, y2) = *pos.get(e.to.as_str())?;
            let path = if y2 > y1 {
                let (a, b) = (y1 + node_h, y2);
                let mid = (a + b) / 2.0;
                format!("M{x1:.1},{a:.1} C{x1:.1},{mid:.1} {x2:.1},{mid:.1} {x2:.1},{b:.1}")
            } else {
                // Same rank (a revision beside its original) or upwards: loop below the row.
                let (a, b) = (y1 + node_h, y2 + node_h);
                let low = a.max(b) + GAP_Y * 0.6;
                format!("M{x1:.1},{a:.1} C{x1:.1},{low:.1} {x2:.1},{low:.1} {x2:.1},{b:.1}")
            };
            Some(serde_json::json!({
                "from": e.from, "to": e.to,
                "path": path,
                "dashed": e.kind == EdgeKind::Revises,
            }))
        })
        .collect();
    serde_json::json!({
        "width": width.max(200.0),
        "height": height.max(60.0),
        "nodes": boxes,
        "edges": edges,
    })
}
