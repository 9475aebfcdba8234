export default function ExecutionsPage() {
  return (
    <section className="page">
      <h1>Executions</h1>
    </section>
  );
}
