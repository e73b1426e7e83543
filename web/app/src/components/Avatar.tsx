/** A customer's picture, or their initials when they have none. */
export function Avatar({ name, url }: { name: string; url?: string }) {
  if (url) return <img className="avatar" src={url} alt="" loading="lazy" />;
  const initials =
    name
      .trim()
      .split(/\s+/)
      .slice(0, 2)
      .map((w) => w[0]?.toUpperCase() ?? '')
      .join('') || '?';
  return (
    <span className="avatar" aria-hidden="true">
      {initials}
    </span>
  );
}
