/** A run's (or a step's, a call's) status as a colored badge. */
export function StatusBadge({ status, title }: { status: string; title?: string }) {
  return (
    <span class={`badge st-${status}`} title={title} data-status={status}>
      {status.replace('_', ' ')}
    </span>
  );
}
