export default function PlaygroundPage() {
  return (
    <section className="page">
      <h1>Playground</h1>
    </section>
  );
}
