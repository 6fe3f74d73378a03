//! Binding `OVER` clauses: resolving named windows, checking frames, and lifting the calls out
//! of a query's output into a [`Plan::Window`](tern_exec::plan::Plan::Window) operator.

use super::syntax::split_window_name;
use crate::bind::{Binder, Scope, lower, sort_key};
use sqlparser::ast;
use tern_exec::error::{Error, Result};
use tern_exec::plan::{
    AggregateFunction, Expr, FrameBound, FrameExclusion, FrameUnits, Window, WindowCall, WindowFrame, WindowFunction,
};

/// A window as written, once named windows it builds on are merged in.
struct WrittenWindow {
    partition_by: Vec<ast::Expr>,
    order_by: Vec<ast::OrderByExpr>,
    frame: Option<ast::WindowFrame>,
    exclusion: FrameExclusion,
}

fn window_error(message: impl Into<String>) -> Error {
    Error::new("42P20", message)
}

impl Binder<'_> {
    /// `name(args) [FILTER (WHERE ...)] OVER window`. `aggregate` is the aggregate `name`
    /// names, if any.
    pub(crate) fn bind_window_call(
        &mut self,
        name: &str,
        function: &ast::Function,
        args: &[&ast::Expr],
        aggregate: Option<AggregateFunction>,
        distinct: bool,
        scope: &Scope,
    ) -> Result<Expr> {
        if let Some((sqlstate, message)) = self.window_refusal {
            return Err(Error::new(sqlstate, message));
        }
        let Some(over) = &function.over else { return Err(Error::internal("window call without OVER")) };
        if function.null_treatment.is_some() {
            return Err(Error::unsupported("IGNORE NULLS and RESPECT NULLS"));
        }
        let function_kind = match aggregate {
            Some(aggregate) => WindowFunction::Aggregate(aggregate),
            None => window_function(name, args.len())?,
        };
        if distinct {
            return Err(Error::new("0A000", "DISTINCT is not implemented for window functions"));
        }
        if function.filter.is_some() && aggregate.is_none() {
            return Err(Error::new("0A000", "FILTER is not implemented for non-aggregate window functions"));
        }
        // Arguments, filter and window are bound where window functions may not appear.
        let refusal = self.window_refusal.replace(("42P20", "window function calls cannot be nested"));
        let bound = self.bind_window_parts(function, over, args, scope);
        self.window_refusal = refusal;
        let (args, filter, window) = bound?;
        self.window_calls += 1;
        Ok(Expr::Window(Box::new(WindowCall { function: function_kind, args, filter, window })))
    }

    fn bind_window_parts(
        &mut self,
        function: &ast::Function,
        over: &ast::WindowType,
        args: &[&ast::Expr],
        scope: &Scope,
    ) -> Result<(Vec<Expr>, Option<Expr>, Window)> {
        let args = args.iter().map(|arg| self.bind_expr(arg, scope)).collect::<Result<Vec<_>>>()?;
        let filter = function.filter.as_deref().map(|filter| self.bind_expr(filter, scope)).transpose()?;
        let written = self.resolve_window(over)?;
        let window = self.bind_window(written, scope)?;
        Ok((args, filter, window))
    }

    /// The window an OVER clause names or writes, merged with the named window it builds on.
    fn resolve_window(&self, over: &ast::WindowType) -> Result<WrittenWindow> {
        match over {
            ast::WindowType::NamedWindow(name) => self.named_window(&lower(name), 0),
            ast::WindowType::WindowSpec(spec) => self.resolve_spec(spec, 0),
        }
    }

    fn resolve_spec(&self, spec: &ast::WindowSpec, depth: usize) -> Result<WrittenWindow> {
        // Window names fold to lower case, quoted or not, like every name in Tern.
        let (base_name, exclusion) = match &spec.window_name {
            Some(name) => {
                let (written, exclusion) = split_window_name(&name.value);
                (written.map(str::to_ascii_lowercase), exclusion)
            }
            None => (None, FrameExclusion::NoOthers),
        };
        let mut window = WrittenWindow {
            partition_by: spec.partition_by.clone(),
            order_by: spec.order_by.clone(),
            frame: spec.window_frame.clone(),
            exclusion,
        };
        let Some(base_name) = base_name else { return Ok(window) };
        let base = self.named_window(&base_name, depth + 1)?;
        if !window.partition_by.is_empty() {
            return Err(window_error(format!("cannot override PARTITION BY clause of window \"{base_name}\"")));
        }
        if !base.order_by.is_empty() && !window.order_by.is_empty() {
            return Err(window_error(format!("cannot override ORDER BY clause of window \"{base_name}\"")));
        }
        if base.frame.is_some() {
            return Err(window_error(format!("cannot copy window \"{base_name}\" because it has a frame clause")));
        }
        window.partition_by = base.partition_by;
        if window.order_by.is_empty() {
            window.order_by = base.order_by;
        }
        Ok(window)
    }

    /// A window of the query's WINDOW clause.
    fn named_window(&self, name: &str, depth: usize) -> Result<WrittenWindow> {
        if depth > self.named_windows.len() {
            return Err(window_error(format!("window \"{name}\" refers to itself")));
        }
        let definition = self
            .named_windows
            .iter()
            .find(|definition| lower(&definition.0) == name)
            .ok_or_else(|| Error::new("42704", format!("window \"{name}\" does not exist")))?;
        match &definition.1 {
            ast::NamedWindowExpr::WindowSpec(spec) => self.resolve_spec(spec, depth),
            ast::NamedWindowExpr::NamedWindow(other) => self.named_window(&lower(other), depth + 1),
        }
    }

    fn bind_window(&mut self, written: WrittenWindow, scope: &Scope) -> Result<Window> {
        let partition_by =
            written.partition_by.iter().map(|expr| self.bind_expr(expr, scope)).collect::<Result<Vec<_>>>()?;
        let mut order_by = Vec::new();
        for term in &written.order_by {
            order_by.push(sort_key(self.bind_expr(&term.expr, scope)?, &term.options, self.dialect));
        }
        if written.frame.is_none() && written.exclusion != FrameExclusion::NoOthers {
            return Err(Error::syntax("EXCLUDE needs a frame (ROWS, RANGE or GROUPS)"));
        }
        let frame = match &written.frame {
            // Without a frame: from the partition's start to the current row's last peer (the
            // whole partition when there is no ORDER BY: every row is a peer).
            None => WindowFrame {
                units: FrameUnits::Range,
                start: FrameBound::UnboundedPreceding,
                end: FrameBound::CurrentRow,
                exclusion: written.exclusion,
            },
            Some(frame) => self.bind_frame(frame, written.exclusion, order_by.len(), scope)?,
        };
        Ok(Window { partition_by, order_by, frame })
    }

    fn bind_frame(
        &mut self,
        frame: &ast::WindowFrame,
        exclusion: FrameExclusion,
        order_terms: usize,
        scope: &Scope,
    ) -> Result<WindowFrame> {
        let units = match frame.units {
            ast::WindowFrameUnits::Rows => FrameUnits::Rows,
            ast::WindowFrameUnits::Range => FrameUnits::Range,
            ast::WindowFrameUnits::Groups => FrameUnits::Groups,
        };
        let start = self.bind_frame_bound(&frame.start_bound, units, scope)?;
        let end = match &frame.end_bound {
            Some(bound) => self.bind_frame_bound(bound, units, scope)?,
            None => FrameBound::CurrentRow,
        };
        check_frame(&start, &end)?;
        let has_offset = |bound: &FrameBound| matches!(bound, FrameBound::Preceding(_) | FrameBound::Following(_));
        if units == FrameUnits::Range && (has_offset(&start) || has_offset(&end)) && order_terms != 1 {
            return Err(window_error("RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"));
        }
        if units == FrameUnits::Groups && order_terms == 0 {
            return Err(window_error("GROUPS mode requires an ORDER BY clause"));
        }
        Ok(WindowFrame { units, start, end, exclusion })
    }

    fn bind_frame_bound(
        &mut self,
        bound: &ast::WindowFrameBound,
        units: FrameUnits,
        scope: &Scope,
    ) -> Result<FrameBound> {
        let mut offset = |expr: &ast::Expr| -> Result<Expr> {
            let bound = self.bind_expr(expr, scope)?;
            let mut correlated = false;
            bound.walk(&mut |part| {
                if let Expr::InSubquery { subquery, .. }
                | Expr::Exists { subquery, .. }
                | Expr::ScalarSubquery(subquery) = part
                {
                    correlated |= subquery.correlated;
                }
            });
            if !bound.columns().is_empty() || bound.contains_aggregate() || correlated {
                let units = format!("{units:?}").to_ascii_uppercase();
                return Err(Error::new("42P10", format!("argument of {units} must not contain variables")));
            }
            Ok(bound)
        };
        Ok(match bound {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(expr)) => FrameBound::Preceding(offset(expr)?),
            ast::WindowFrameBound::Following(Some(expr)) => FrameBound::Following(offset(expr)?),
        })
    }
}

/// A frame must not start after it ends by construction (PostgreSQL's and SQLite's rules).
fn check_frame(start: &FrameBound, end: &FrameBound) -> Result<()> {
    let message = match (start, end) {
        (FrameBound::UnboundedFollowing, _) => "frame start cannot be UNBOUNDED FOLLOWING",
        (_, FrameBound::UnboundedPreceding) => "frame end cannot be UNBOUNDED PRECEDING",
        (FrameBound::CurrentRow, FrameBound::Preceding(_)) => {
            "frame starting from current row cannot have preceding rows"
        }
        (FrameBound::Following(_), FrameBound::Preceding(_) | FrameBound::CurrentRow) => {
            "frame starting from following row cannot have preceding rows"
        }
        _ => return Ok(()),
    };
    Err(window_error(message))
}

/// The ranking or value function `name` with `count` arguments.
fn window_function(name: &str, count: usize) -> Result<WindowFunction> {
    let (function, min, max) = match name {
        "row_number" => (WindowFunction::RowNumber, 0, 0),
        "rank" => (WindowFunction::Rank, 0, 0),
        "dense_rank" => (WindowFunction::DenseRank, 0, 0),
        "percent_rank" => (WindowFunction::PercentRank, 0, 0),
        "cume_dist" => (WindowFunction::CumeDist, 0, 0),
        "ntile" => (WindowFunction::Ntile, 1, 1),
        "lag" => (WindowFunction::Lag, 1, 3),
        "lead" => (WindowFunction::Lead, 1, 3),
        "first_value" => (WindowFunction::FirstValue, 1, 1),
        "last_value" => (WindowFunction::LastValue, 1, 1),
        "nth_value" => (WindowFunction::NthValue, 2, 2),
        _ if tern_exec::functions::ScalarFunction::lookup(name).is_some() => {
            return Err(Error::new(
                "42809",
                format!("OVER specified, but {name} is not a window function nor an aggregate function"),
            ));
        }
        _ => return Err(Error::undefined_function(name)),
    };
    if !(min..=max).contains(&count) {
        return Err(Error::new("42883", format!("wrong number of arguments to function {name}()")));
    }
    Ok(function)
}

/// Replaces each window call in `expr` by a column after the `base` columns of the window
/// operator's input, adding the call to `calls` (a call written twice is computed once).
pub(crate) fn extract_windows(expr: Expr, base: usize, calls: &mut Vec<WindowCall>) -> Expr {
    match expr {
        Expr::Window(call) => {
            let index = match calls.iter().position(|existing| *existing == *call) {
                Some(index) => index,
                None => {
                    calls.push(*call);
                    calls.len() - 1
                }
            };
            Expr::Column(base + index)
        }
        other => tern_exec::limits::with_stack(|| other.map_children(&mut |child| extract_windows(child, base, calls))),
    }
}
